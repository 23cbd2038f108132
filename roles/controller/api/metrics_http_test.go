package api

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeToken writes a token file (with the trailing newline editors add).
func writeToken(t *testing.T, tok string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(tok+"\n"), 0o600))
	return p
}

// doOn serves one request with h; hdr holds header name/value pairs.
func doOn(h http.Handler, method, path string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// requireSeries checks a 200 Prometheus exposition with corral_ series.
func requireSeries(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "corral_http_request_duration_seconds")
}

func TestMetricsOpenByDefault(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) { f.cfg.APITokenFile = writeToken(t, "api-secret") })
	f.do("GET", "/healthz", "") // one observation, so the histogram has series
	requireSeries(t, f.do("GET", "/metrics", ""))
}

func TestMetricsToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) {
		f.cfg.APITokenFile = writeToken(t, "api-secret")
		f.cfg.MetricsTokenFile = writeToken(t, "scrape-secret")
	})
	f.do("GET", "/healthz", "")

	for _, tc := range []struct {
		name string
		hdr  []string
		want string // in the 401's message; "" means 200
	}{
		{"no token", nil, "missing metrics token"},
		{"not bearer", []string{"Authorization", "scrape-secret"}, "missing metrics token"},
		{"empty bearer", []string{"Authorization", "Bearer "}, "missing metrics token"},
		{"wrong token", []string{"Authorization", "Bearer nope"}, "wrong metrics token"},
		{"token prefix", []string{"Authorization", "Bearer scrape"}, "wrong metrics token"},
		{"metrics token", []string{"Authorization", "Bearer scrape-secret"}, ""},
		{"API token", []string{"Authorization", "Bearer api-secret"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.do("GET", "/metrics", "", tc.hdr...)
			if tc.want == "" {
				requireSeries(t, rec)
				return
			}
			m := requireAnswer(t, rec, http.StatusUnauthorized, "unauthorized")
			require.Contains(t, m["error"], tc.want)
			require.Contains(t, m["error"], "authorization: {credentials_file: FILE}")
			require.Contains(t, rec.Header().Get("WWW-Authenticate"), "Bearer")
		})
	}

	// The metrics token opens /metrics only, not the API; probes stay open.
	requireAnswer(t, f.do("GET", "/v1/cluster", "", "Authorization", "Bearer scrape-secret"),
		http.StatusUnauthorized, "unauthorized")
	requireAnswer(t, f.do("GET", "/healthz", ""), http.StatusOK, "")
	requireAnswer(t, f.do("GET", "/readyz", ""), http.StatusOK, "")
}

// Without an API token (a loopback API) the metrics token still guards
// /metrics, and nothing else changes.
func TestMetricsTokenWithoutAPIToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) { f.cfg.MetricsTokenFile = writeToken(t, "scrape-secret") })
	requireAnswer(t, f.do("GET", "/metrics", ""), http.StatusUnauthorized, "unauthorized")
	requireAnswer(t, f.do("GET", "/metrics", "", "Authorization", "Bearer "), http.StatusUnauthorized, "unauthorized")
	requireSeries(t, f.do("GET", "/metrics", "", "Authorization", "Bearer scrape-secret"))
	requireAnswer(t, f.do("GET", "/v1/cluster", ""), http.StatusOK, "")
}

func TestMetricsMovedOffAPIPort(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) {
		f.cfg.APITokenFile = writeToken(t, "api-secret")
		f.cfg.MetricsAddr = "127.0.0.1:9464"
	})
	// The API port says where the metrics went, token or not (a scraper
	// left pointing at it gets an answer it can act on).
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer api-secret"}} {
		m := requireAnswer(t, f.do("GET", "/metrics", "", hdr...), http.StatusNotFound, "metrics_moved")
		require.Contains(t, m["error"], "http://127.0.0.1:9464/metrics")
	}

	mh := f.srv.metricsHandler()
	doOn(mh, "GET", "/healthz")
	requireSeries(t, doOn(mh, "GET", "/metrics")) // no metrics token: open
	requireAnswer(t, doOn(mh, "GET", "/healthz"), http.StatusOK, "")
	requireAnswer(t, doOn(mh, "GET", "/readyz"), http.StatusOK, "")
	// The metrics listener is not a second API port.
	m := requireAnswer(t, doOn(mh, "GET", "/v1/cluster", "Authorization", "Bearer api-secret"), http.StatusNotFound, "not_found")
	require.Contains(t, m["error"], "metrics listener")
	requireAnswer(t, doOn(mh, "PUT", "/v1/kv/a", "Authorization", "Bearer api-secret"), http.StatusNotFound, "not_found")
}

func TestMetricsListenerTakesToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) {
		f.cfg.APITokenFile = writeToken(t, "api-secret")
		f.cfg.MetricsTokenFile = writeToken(t, "scrape-secret")
		f.cfg.MetricsAddr = "127.0.0.1:0"
	})
	mh := f.srv.metricsHandler()
	doOn(mh, "GET", "/healthz")
	requireAnswer(t, doOn(mh, "GET", "/metrics"), http.StatusUnauthorized, "unauthorized")
	requireAnswer(t, doOn(mh, "GET", "/metrics", "Authorization", "Bearer nope"), http.StatusUnauthorized, "unauthorized")
	requireSeries(t, doOn(mh, "GET", "/metrics", "Authorization", "Bearer scrape-secret"))
	requireSeries(t, doOn(mh, "GET", "/metrics", "Authorization", "Bearer api-secret"))
	requireAnswer(t, doOn(mh, "GET", "/readyz"), http.StatusOK, "")
	// The API port's 404 needs no token either way.
	requireAnswer(t, f.do("GET", "/metrics", "", "Authorization", "Bearer scrape-secret"), http.StatusNotFound, "metrics_moved")
}

func TestMetricsTokenFileErrors(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte(" \n\t"), 0o600))
	missing := filepath.Join(t.TempDir(), "missing")
	for file, want := range map[string]string{empty: "metrics token file " + empty + " is empty", missing: "read metrics token file"} {
		s := New(Config{MetricsTokenFile: file}, Backend{})
		require.ErrorContains(t, s.loadToken(), want)
	}
	tok, err := ReadTokenFile(writeToken(t, "  s3cret "), "metrics token")
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(tok))
}

// get fetches url over real HTTP.
func get(t *testing.T, url string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestMetricsListen(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) {
		f.cfg.MetricsTokenFile = writeToken(t, "scrape-secret")
		f.cfg.MetricsAddr = "127.0.0.1:0"
	})
	require.NoError(t, f.srv.Listen())
	t.Cleanup(func() { _ = f.srv.Shutdown(context.Background()) })
	maddr, aaddr := f.srv.MetricsAddr(), f.srv.Addr()
	require.NotEmpty(t, maddr)
	require.NotEqual(t, aaddr, maddr)

	code, body := get(t, "http://"+maddr+"/metrics")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = get(t, "http://"+maddr+"/metrics", "Authorization", "Bearer scrape-secret")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "corral_")
	code, body = get(t, "http://"+aaddr+"/metrics", "Authorization", "Bearer scrape-secret")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body, "http://"+maddr+"/metrics")
	code, _ = get(t, "http://"+maddr+"/healthz")
	require.Equal(t, http.StatusOK, code)

	require.NoError(t, f.srv.Shutdown(context.Background()))
	_, err := net.DialTimeout("tcp", maddr, time.Second)
	require.Error(t, err, "the metrics listener outlived Shutdown")
}

// A metrics address that cannot be bound fails Listen, and the API is not
// left serving.
func TestMetricsListenBusyAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	f := newFixture(t, func(f *fixture) { f.cfg.MetricsAddr = busy.Addr().String() })
	err = f.srv.Listen()
	require.ErrorContains(t, err, "listen for metrics on "+busy.Addr().String()+" (--metrics-addr)")
	require.Empty(t, f.srv.Addr(), "the API serves although Listen failed")

	f = newFixture(t, func(f *fixture) { f.cfg.MetricsAddr = "nonsense" })
	require.ErrorContains(t, f.srv.Listen(), `bad --metrics-addr "nonsense"`)
	require.Empty(t, f.srv.MetricsAddr())

	// The other way round: the API address is busy, the metrics listener
	// bound first is closed again.
	f = newFixture(t, func(f *fixture) {
		f.cfg.HTTPAddr = busy.Addr().String()
		f.cfg.MetricsAddr = "127.0.0.1:0"
	})
	require.ErrorContains(t, f.srv.Listen(), "listen for HTTP on "+busy.Addr().String())
	require.Empty(t, f.srv.MetricsAddr())
}
