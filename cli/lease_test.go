package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// leaseAPI answers for lease 7 (TTL 300ms, every refresh counted); any other lease is gone.
func leaseAPI(t *testing.T) (url string, refreshes *atomic.Int64) {
	refreshes = new(atomic.Int64)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/leases/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "7" {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "lease not found", "code": "lease_not_found"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "ttl_ms": 300, "remaining_ms": 250})
	})
	mux.HandleFunc("POST /v1/leases/{id}/keepalive", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "7" {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "lease not found", "code": "lease_not_found"})
			return
		}
		refreshes.Add(1)
		writeJSON(w, http.StatusOK, map[string]any{"id": 7, "ttl_ms": 300})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, refreshes
}

func TestLeaseKeepAliveUntilInterrupted(t *testing.T) {
	url, refreshes := leaseAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := App()
	var out, errOut syncBuffer
	app.Writer, app.ErrWriter = &out, &errOut
	done := make(chan error, 1)
	go func() { done <- app.RunContext(ctx, []string{"corral", "lease", "keepalive", "--endpoints", url, "7"}) }()

	require.Eventually(t, func() bool { return refreshes.Load() >= 3 }, 10*time.Second, 10*time.Millisecond,
		"keepalive did not keep refreshing")
	cancel() // what Ctrl-C does through signalContext
	select {
	case err := <-done:
		require.NoError(t, err, "interrupting keepalive is a normal exit")
	case <-time.After(10 * time.Second):
		t.Fatal("keepalive did not stop when interrupted")
	}
	require.Contains(t, errOut.String(), "keeping lease 7 alive (TTL 300ms, refreshed every 100ms); Ctrl-C to stop")
}

func TestLeaseKeepAliveOnceAndGone(t *testing.T) {
	url, refreshes := leaseAPI(t)
	_, _, err := run(t, "lease", "keepalive", "--endpoints", url, "--once", "7")
	require.NoError(t, err)
	require.EqualValues(t, 1, refreshes.Load())

	_, _, err = run(t, "lease", "keepalive", "--endpoints", url, "8")
	require.ErrorContains(t, err, "lease 8 not found: it expired or was revoked; grant a new one with 'corral lease grant --endpoints "+url+" TTL'")
	_, _, err = run(t, "lease", "keepalive", "--endpoints", url, "--once", "8")
	require.ErrorContains(t, err, "lease 8 not found")
}
