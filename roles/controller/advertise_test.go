package controller

import (
	"bytes"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// An --http-advertise-addr other machines could not use is refused at
// start, saying what to give instead.
func TestConfig_HTTPAdvertiseAddrIsChecked(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr, want string // want "" = accepted
	}{
		{addr: ""},
		{addr: "ctrl1.example.com:8080"},
		{addr: "10.0.0.1:8080"},
		{addr: "[2001:db8::1]:8080"},
		{addr: "ctrl1.example.com", want: "want HOST:PORT other machines reach this API on"},
		{addr: "0.0.0.0:8080", want: `"0.0.0.0" is no address to reach; give this machine's name or IP`},
		{addr: "[::]:8080", want: `"::" is no address to reach`},
		{addr: ":8080", want: `"" is no address to reach`},
		{addr: "ctrl1:http", want: "the port must be a number from 1 to 65535"},
		{addr: "ctrl1:0", want: "the port must be a number from 1 to 65535"},
	}
	for _, tc := range cases {
		cfg := Config{NodeID: 1, DataDir: "d", Peers: map[uint64]string{1: "mem:1"}, TLSDir: "tls",
			HTTPAddr: "0.0.0.0:8080", HTTPAdvertiseAddr: tc.addr}
		cfg.Defaults()
		err := cfg.Validate()
		if tc.want == "" {
			require.NoError(t, err, tc.addr)
			continue
		}
		require.ErrorContains(t, err, "bad --http-advertise-addr", tc.addr)
		require.ErrorContains(t, err, tc.want, tc.addr)
	}

	cfg := Config{NodeID: 1, DataDir: "d", Peers: map[uint64]string{1: "mem:1"}, TLSDir: "tls", HTTPAdvertiseAddr: "ctrl1:8080"}
	cfg.Defaults()
	require.ErrorContains(t, cfg.Validate(), "--http-advertise-addr needs --http-addr")
}

func TestConfig_AnnouncedHTTPAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		advertise, listen, want string
		unreachable             bool
	}{
		{listen: "127.0.0.1:8080", want: "127.0.0.1:8080"},
		{listen: "10.0.0.1:8080", want: "10.0.0.1:8080"},
		{listen: "[::]:8080", want: "[::]:8080", unreachable: true},
		{listen: "0.0.0.0:8080", want: "0.0.0.0:8080", unreachable: true},
		{advertise: "ctrl1.example.com:8080", listen: "[::]:8080", want: "ctrl1.example.com:8080"},
	} {
		cfg := Config{HTTPAdvertiseAddr: tc.advertise}
		got, unreachable := cfg.announcedHTTPAddr(tc.listen)
		require.Equal(t, tc.want, got, tc.listen)
		require.Equal(t, tc.unreachable, unreachable, tc.listen)
	}
}

// lockedBuffer is a log sink written by the controller's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The member list carries the advertised address, not the listen one, and
// a browser sent there is served (its host is allowed).
func TestHTTP_AnnouncesTheAdvertisedAddress(t *testing.T) {
	c := startHTTPNode(t, map[uint64]string{1: "mem-1"}, func(cfg *Config) {
		cfg.HTTPAdvertiseAddr = "ctrl1.corral.test:8080"
	})
	require.Eventually(t, func() bool {
		_, httpAddr := c.r.MemberAddress(1)
		return httpAddr == "ctrl1.corral.test:8080"
	}, 10*time.Second, 10*time.Millisecond, "the advertised address is announced")

	req, err := http.NewRequest("GET", "http://"+c.HTTPAddr()+"/v1/cluster", nil)
	require.NoError(t, err)
	req.Host = "ctrl1.corral.test:8080"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the advertised host is an allowed Host")
}

// Listening on every interface without --http-advertise-addr still works,
// with a warning naming the flag.
func TestHTTP_UnspecifiedListenAddressWarns(t *testing.T) {
	logs := &lockedBuffer{}
	cfg := Config{NodeID: 1, DataDir: t.TempDir(), Peers: map[uint64]string{1: "mem-1"}, NoSync: true,
		HTTPAddr: "0.0.0.0:0", HTTPInsecure: true, TickInterval: 10 * time.Millisecond, RequestTimeout: 2 * time.Second,
		Transport: transport.NewMemNetwork(1).Transport(1), Logger: slog.New(slog.NewTextHandler(logs, nil))}
	c, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "set --http-advertise-addr HOST:PORT")
}
