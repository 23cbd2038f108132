package controller

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/api"
	"github.com/corral-dev/corral/transport"
)

// startHTTPNode starts a controller with the HTTP API on a random loopback
// port; with peers listing absent nodes it never gets a leader.
func startHTTPNode(t *testing.T, peers map[uint64]string, tweak func(*Config)) *Controller {
	t.Helper()
	cfg := Config{
		NodeID: 1, DataDir: t.TempDir(), Peers: peers, NoSync: true, HTTPAddr: "127.0.0.1:0",
		TickInterval: 10 * time.Millisecond, RequestTimeout: 2 * time.Second,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Transport: transport.NewMemNetwork(1).Transport(1),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t *testing.T, method, url, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Corral-Client", "test") // writes need it (api/browser.go)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out), "every answer is JSON")
	return resp.StatusCode, out
}

func TestHTTP_KVRoundTripAndErrors(t *testing.T) {
	c := startHTTPNode(t, map[uint64]string{1: "mem-1"}, nil)
	base := "http://" + c.HTTPAddr()
	require.Eventually(t, func() bool {
		code, _ := do(t, "GET", base+"/readyz", "")
		return code == 200
	}, 10*time.Second, 10*time.Millisecond)

	code, out := do(t, "PUT", base+"/v1/kv/a/b", "hello")
	require.Equal(t, 200, code, out)
	rev := int64(out["revision"].(float64))

	code, out = do(t, "GET", base+"/v1/kv/a/b", "")
	require.Equal(t, 200, code)
	require.Equal(t, "hello", out["value"])
	require.EqualValues(t, rev, out["mod_revision"])
	require.EqualValues(t, 1, out["version"])

	code, out = do(t, "GET", base+"/v1/kv/a/b?encoding=base64&consistency=serializable", "")
	require.Equal(t, 200, code)
	require.Equal(t, "aGVsbG8=", out["value"])

	code, out = do(t, "PUT", base+"/v1/kv/a/b?prev_revision=999", "x")
	require.Equal(t, 409, code)
	require.Equal(t, "compare_failed", out["code"])
	require.EqualValues(t, rev, out["mod_revision"])

	code, out = do(t, "PUT", base+"/v1/kv/a/b?prev_revision="+jsonNum(rev), "x")
	require.Equal(t, 200, code, out)

	code, out = do(t, "GET", base+"/v1/kv/a/?prefix=true", "")
	require.Equal(t, 200, code)
	require.Len(t, out["kvs"], 1)

	code, out = do(t, "DELETE", base+"/v1/kv/a/b", "")
	require.Equal(t, 200, code)
	require.EqualValues(t, 1, out["deleted"])
	code, out = do(t, "GET", base+"/v1/kv/a/b", "")
	require.Equal(t, 404, code)
	require.Equal(t, "not_found", out["code"])

	revBefore := c.State().Revision()
	bad := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"PUT", "/v1/kv/", "v", 400, "bad_request"},
		{"PUT", "/v1/kv/k?prev_revision=abc", "v", 400, "bad_request"},
		{"PUT", "/v1/kv/k?prev_revision=-1", "v", 400, "bad_request"},
		{"PUT", "/v1/kv/" + strings.Repeat("k", api.MaxKeyBytes+1), "v", 413, "too_large"},
		{"PUT", "/v1/kv/k", strings.Repeat("v", api.MaxValueBytes+1), 413, "too_large"},
		{"PUT", "/v1/kv/k%00", "v", 400, "bad_request"},
		{"GET", "/v1/kv/k?consistency=maybe", "", 400, "bad_request"},
		{"GET", "/v1/kv/k?encoding=hex", "", 400, "bad_request"},
		{"GET", "/v1/nothing", "", 404, "not_found"},
	}
	for _, tc := range bad {
		code, out := do(t, tc.method, base+tc.path, tc.body)
		require.Equal(t, tc.status, code, "%s %s: %v", tc.method, tc.path, out)
		require.Equal(t, tc.code, out["code"], "%s %s", tc.method, tc.path)
		require.NotEmpty(t, out["error"])
	}
	require.Equal(t, revBefore, c.State().Revision(), "bad input changed the store")
}

func jsonNum(v int64) string { b, _ := json.Marshal(v); return string(b) }

func TestHTTP_TokenRequired(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	c := startHTTPNode(t, map[uint64]string{1: "mem-1"}, func(cfg *Config) { cfg.APITokenFile = tokenFile })
	base := "http://" + c.HTTPAddr()
	code, out := do(t, "GET", base+"/v1/cluster", "")
	require.Equal(t, 401, code)
	require.Equal(t, "unauthorized", out["code"])
	code, _ = do(t, "GET", base+"/v1/cluster", "", "Authorization", "Bearer wrong")
	require.Equal(t, 401, code)
	code, _ = do(t, "GET", base+"/v1/cluster", "", "Authorization", "Bearer s3cret")
	require.Equal(t, 200, code)
	code, _ = do(t, "GET", base+"/healthz", "")
	require.Equal(t, 200, code, "healthz needs no token")
}

func TestHTTP_NonLoopbackNeedsTokenOrInsecure(t *testing.T) {
	cfg := Config{NodeID: 1, DataDir: t.TempDir(), Peers: map[uint64]string{1: "mem-1"},
		HTTPAddr: "0.0.0.0:0", Transport: transport.NewMemNetwork(1).Transport(1),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err := Start(cfg)
	require.ErrorContains(t, err, "--http-insecure")

	// A token alone is not enough off loopback: it would cross the
	// network in clear.
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	cfg.DataDir, cfg.APITokenFile = t.TempDir(), tokenFile
	cfg.Transport = transport.NewMemNetwork(1).Transport(1)
	_, err = Start(cfg)
	require.ErrorContains(t, err, "in plain HTTP, where tokens would cross the network in clear; set --http-tls-cert and --http-tls-key")

	// With TLS and a token it serves.
	tlsDir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1"}))
	cfg.DataDir, cfg.Transport = t.TempDir(), transport.NewMemNetwork(1).Transport(1)
	cfg.HTTPTLSCert, cfg.HTTPTLSKey = filepath.Join(tlsDir, transport.NodeFile), filepath.Join(tlsDir, transport.NodeKeyFile)
	c, err := Start(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	cfg.DataDir, cfg.HTTPTLSKey = t.TempDir(), ""
	cfg.Transport = transport.NewMemNetwork(1).Transport(1)
	_, err = Start(cfg)
	require.ErrorContains(t, err, "--http-tls-cert and --http-tls-key go together")
}

func TestHTTP_WritesWithoutQuorumFailFastWith503(t *testing.T) {
	// Peers 2 and 3 never start: no quorum, no leader.
	c := startHTTPNode(t, map[uint64]string{1: "mem-1", 2: "mem-2", 3: "mem-3"},
		func(cfg *Config) { cfg.RequestTimeout = 300 * time.Millisecond })
	base := "http://" + c.HTTPAddr()
	start := time.Now()
	code, out := do(t, "PUT", base+"/v1/kv/k", "v")
	require.Equal(t, 503, code)
	require.Equal(t, "no_leader", out["code"])
	require.Less(t, time.Since(start), 5*time.Second, "write without quorum must not hang")
	code, _ = do(t, "GET", base+"/v1/kv/k", "")
	require.Equal(t, 503, code)
	code, _ = do(t, "GET", base+"/readyz", "")
	require.Equal(t, 503, code)
}
