package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
)

// putDirect writes key=val into the fake store's state (no HTTP).
func putDirect(t *testing.T, f *fixture, key, val string) {
	t.Helper()
	_, err := f.store.Propose(context.Background(), &metadata.Command{Op: metadata.OpPut, Key: key, Value: []byte(val)})
	require.NoError(t, err)
}

type rangeBody struct {
	KVs []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"kvs"`
	Revision int64  `json:"revision"`
	More     bool   `json:"more"`
	Next     string `json:"next"`
}

func getRange(t *testing.T, f *fixture, path string) rangeBody {
	t.Helper()
	rec := f.do("GET", path, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var b rangeBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &b))
	return b
}

func TestKVRangePages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = DefaultRangeLimit + 500
	for i := range n {
		putDirect(t, f, fmt.Sprintf("p/%05d", i), "v")
	}
	putDirect(t, f, "q/outside", "v")

	// No limit: the first DefaultRangeLimit keys and a next marker.
	b := getRange(t, f, "/v1/kv/p/?prefix=true")
	require.Len(t, b.KVs, DefaultRangeLimit)
	require.True(t, b.More)
	require.Equal(t, fmt.Sprintf("p/%05d", DefaultRangeLimit-1), b.Next)
	// The rest with after=next; the last page has no marker.
	b = getRange(t, f, "/v1/kv/p/?prefix=true&after="+b.Next)
	require.Len(t, b.KVs, 500)
	require.Equal(t, fmt.Sprintf("p/%05d", DefaultRangeLimit), b.KVs[0].Key)
	require.False(t, b.More)
	require.Empty(t, b.Next)

	// Explicit limits walk every key exactly once.
	var keys []string
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, n) // bounded
		b = getRange(t, f, "/v1/kv/p/?prefix=true&limit=333&after="+after)
		for _, kv := range b.KVs {
			keys = append(keys, kv.Key)
		}
		if !b.More {
			break
		}
		after = b.Next
	}
	require.Len(t, keys, n)
	for i, k := range keys {
		require.Equal(t, fmt.Sprintf("p/%05d", i), k)
	}

	requireAnswer(t, f.do("GET", fmt.Sprintf("/v1/kv/p/?prefix=true&limit=%d", MaxRangeLimit+1), ""), http.StatusBadRequest, "bad_request")
	requireAnswer(t, f.do("GET", "/v1/kv/p/?prefix=true&after=q/x", ""), http.StatusBadRequest, "bad_request")
}

// A page stops at MaxRangeBytes of keys and values, with the marker
// set, however large the limit.
func TestKVRangeSizeCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	big := strings.Repeat("x", MaxValueBytes-64)
	const n = 10
	for i := range n {
		putDirect(t, f, fmt.Sprintf("big/%02d", i), big)
	}
	seen := 0
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, n)
		rec := f.do("GET", "/v1/kv/big/?prefix=true&limit=10000&after="+after, "")
		require.Equal(t, http.StatusOK, rec.Code)
		require.LessOrEqual(t, rec.Body.Len(), MaxRangeBytes+64<<10, "page of %d bytes", rec.Body.Len())
		var b rangeBody
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &b))
		seen += len(b.KVs)
		if !b.More {
			break
		}
		require.Less(t, len(b.KVs), n)
		after = b.Next
	}
	require.Equal(t, n, seen)
	// One value larger than the cap still comes back alone.
	b := getRange(t, f, "/v1/kv/big/00?prefix=true")
	require.Len(t, b.KVs, 1)
}

func TestWatchLimitIs429(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) {
		f.watches.err = fault.New(fault.Limit, "too_many_watches", "too many open watches")
	})
	requireAnswer(t, f.do("GET", "/v1/watch/a", ""), http.StatusTooManyRequests, "too_many_watches")
}

// serveBounded serves the fixture's API as the controller does
// (newHTTPServer, the connection limit) on a loopback port.
func serveBounded(t *testing.T, cfg func(*Config)) string {
	t.Helper()
	f := newFixture(t, func(f *fixture) { cfg(&f.cfg) })
	require.NoError(t, f.srv.startHTTP())
	t.Cleanup(func() { _ = f.srv.http.Close() })
	return f.srv.Addr()
}

// A body that trickles is cut after ReadTimeout (readDeadline, which
// newHTTPServer puts in front of the API).
func TestHTTPReadTimeoutCutsSlowBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) { f.cfg.ReadTimeout = 300 * time.Millisecond })
	srv := f.srv.newHTTPServer()
	readErr := make(chan error, 1)
	srv.Handler = f.srv.readDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "PUT /v1/kv/slow HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nabc")
	require.NoError(t, err)
	select {
	case err := <-readErr:
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		require.True(t, ne.Timeout(), "%v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a body that never finished was read for 10 s")
	}
}

// The lease keep-alive stream reads its body for as long as it lasts:
// it outlives ReadTimeout (a connection-wide http.Server.ReadTimeout
// would cut it; readDeadline exempts it).
func TestHTTPKeepAliveStreamOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	addr := serveBounded(t, func(c *Config) { c.ReadTimeout = 200 * time.Millisecond })
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequest("POST", "http://"+addr+keepAliveStreamPath, pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("X-Corral-Client", "test")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	// One request line every 50 ms, each answered, for five times
	// ReadTimeout.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for i := 0; time.Since(start) < 5*200*time.Millisecond; i++ {
		<-tick.C
		_, err := io.WriteString(pw, `{"ids": [1]}`+"\n")
		require.NoError(t, err, "line %d, after %v", i, time.Since(start))
		require.True(t, sc.Scan(), "stream ended after %d lines, %v: %v", i, time.Since(start), sc.Err())
		require.NotContains(t, sc.Text(), `"error"`)
	}
}

// request sends one keep-alive GET on c and reads its answer.
func request(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	_, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func TestHTTPIdleTimeoutClosesConns(t *testing.T) {
	t.Parallel()
	addr := serveBounded(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	request(t, c, br)
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = br.ReadByte() // blocks until the server closes the idle connection
	require.ErrorIs(t, err, io.EOF)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestHTTPMaxConns(t *testing.T) {
	t.Parallel()
	addr := serveBounded(t, func(c *Config) { c.MaxConns = 2 })
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		request(t, c, bufio.NewReader(c))
		conns = append(conns, c)
	}
	// A third connection is not served while two are open...
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	_, err = br.ReadByte()
	var ne net.Error
	require.ErrorAs(t, err, &ne, "a connection past the limit was served")
	require.True(t, ne.Timeout())
	// ...and is once one closes.
	require.NoError(t, conns[0].Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
