package api

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/corral-dev/corral/metadata"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Where GET /metrics is served and who may read it:
//
//   - by default, on the API port, open to anyone (as before);
//   - with cfg.MetricsTokenFile, wherever it is served, only with
//     Authorization: Bearer <metrics token> or the API token (an admin may
//     read metrics); anything else is 401 unauthorized;
//   - with cfg.MetricsAddr, on a listener of its own that serves only
//     /metrics, /healthz and /readyz; the API port answers /metrics with
//     404 metrics_moved naming that address.

// metricsCredentialsHint tells an operator how to give Prometheus the token.
const metricsCredentialsHint = "in the Prometheus scrape config set authorization: {credentials_file: FILE} " +
	"with FILE holding the --metrics-token-file token"

// ReadTokenFile reads a bearer token file: its content with surrounding
// white space removed, which must not be empty. what names the token in
// errors ("API token", "metrics token").
func ReadTokenFile(path, what string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s file: %w", what, err)
	}
	tok := []byte(strings.TrimSpace(string(b)))
	if len(tok) == 0 {
		return nil, fmt.Errorf("%s file %s is empty", what, path)
	}
	return tok, nil
}

// loadMetricsToken reads cfg.MetricsTokenFile, if set (loadToken calls it).
func (s *Server) loadMetricsToken() error {
	if s.cfg.MetricsTokenFile == "" {
		return nil
	}
	tok, err := ReadTokenFile(s.cfg.MetricsTokenFile, "metrics token")
	if err != nil {
		return err
	}
	s.metricsToken = tok
	return nil
}

// handleHealthz answers that the process serves HTTP.
func handleHealthz(http.ResponseWriter, *http.Request) (any, error) {
	return map[string]string{"status": "ok"}, nil
}

// metrics is the Prometheus exposition of cfg.Registry behind the metrics
// token, if there is one.
func (s *Server) metrics() http.Handler {
	prom := promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkMetricsToken(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="corral metrics"`)
			writeError(w, err)
			return
		}
		prom.ServeHTTP(w, r)
	})
}

// checkMetricsToken is nil when no metrics token is set or r carries it
// (or the API token), else the 401 to answer. Both comparisons run in
// constant time.
func (s *Server) checkMetricsToken(r *http.Request) error {
	if s.metricsToken == nil {
		return nil
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return httpError(http.StatusUnauthorized, "unauthorized",
			"missing metrics token: GET /metrics needs Authorization: Bearer <token> (--metrics-token-file); %s",
			metricsCredentialsHint)
	}
	metricsOK := subtle.ConstantTimeCompare([]byte(got), s.metricsToken) == 1
	apiOK := s.token != nil && subtle.ConstantTimeCompare([]byte(got), s.token) == 1
	if id := s.store.State().ACL().Lookup(got); id != nil && id.Allows(metadata.ACLOperator, metadata.ACLRead, "") {
		apiOK = true // an ACL token with operator:read (acl.go)
	}
	if !metricsOK && !apiOK {
		return httpError(http.StatusUnauthorized, "unauthorized",
			"wrong metrics token: the bearer token is neither the --metrics-token-file token, the API token nor an ACL token with operator:read; %s",
			metricsCredentialsHint)
	}
	return nil
}

// apiPortMetrics is GET /metrics on the API port: the metrics, or, when
// they are served on their own listener, a 404 that says where.
func (s *Server) apiPortMetrics() http.Handler {
	if s.cfg.MetricsAddr == "" {
		return s.metrics()
	}
	return s.handle(func(http.ResponseWriter, *http.Request) (any, error) {
		return nil, notFound("metrics_moved",
			"metrics are not served on the API port: scrape http://%s/metrics (--metrics-addr)", s.metricsWhere())
	})
}

// metricsWhere is the metrics listener's address: the bound one once
// listening (a :0 port resolved), else as configured.
func (s *Server) metricsWhere() string {
	if a := s.MetricsAddr(); a != "" {
		return a
	}
	return s.cfg.MetricsAddr
}

// metricsHandler is what the metrics listener serves: GET /metrics (behind
// the metrics token, if set), the probes, and a JSON 404 for the rest.
func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.handle(handleHealthz))
	mux.HandleFunc("GET /readyz", s.handle(s.handleReadyz))
	mux.Handle("GET /metrics", s.metrics())
	mux.HandleFunc("/", s.handle(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		return nil, notFound("not_found", "no route for %s %s on the metrics listener: it serves GET /metrics, "+
			"/healthz and /readyz; the API is on --http-addr", r.Method, r.URL.Path)
	}))
	return s.instrument(mux)
}

// listenMetrics binds cfg.MetricsAddr, if set. Listen calls it before the
// API serves, so the API's 404 can name the bound address.
func (s *Server) listenMetrics() error {
	if s.cfg.MetricsAddr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(s.cfg.MetricsAddr); err != nil {
		return fmt.Errorf("bad --metrics-addr %q: %w", s.cfg.MetricsAddr, err)
	}
	host, _, _ := net.SplitHostPort(s.cfg.MetricsAddr)
	if s.cfg.TLS == nil && s.cfg.MetricsTokenFile != "" && !isLoopback(host) && !s.cfg.HTTPInsecure {
		return fmt.Errorf("refusing to serve metrics on %s in plain HTTP with a token, which would cross the network in clear; set --http-tls-cert and --http-tls-key (they serve the metrics port too), use a loopback address, or pass --http-insecure", s.cfg.MetricsAddr)
	}
	ln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen for metrics on %s (--metrics-addr): %w", s.cfg.MetricsAddr, err)
	}
	s.metricsLn = ln
	return nil
}

// serveMetrics serves the bound metrics listener in the background, with
// the API server's settings (timeouts) and the metrics handler.
func (s *Server) serveMetrics() {
	if s.metricsLn == nil {
		return
	}
	srv := s.newHTTPServer()
	srv.Handler = s.metricsHandler()
	s.metricsHTTP = srv
	ln := s.metricsLn
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics HTTP server stopped", "err", err)
		}
	}()
}

// shutdownMetrics stops the metrics listener's server, or closes a
// listener bound but never served.
func (s *Server) shutdownMetrics(ctx context.Context) error {
	switch {
	case s.metricsHTTP != nil:
		return s.metricsHTTP.Shutdown(ctx)
	case s.metricsLn != nil:
		err := s.metricsLn.Close()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	}
	return nil
}

// MetricsAddr returns the address the metrics listener is bound to (""
// without --metrics-addr or before Listen).
func (s *Server) MetricsAddr() string {
	if s.metricsLn == nil {
		return ""
	}
	return s.metricsLn.Addr().String()
}
