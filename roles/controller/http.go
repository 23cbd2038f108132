package controller

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// API limits, enforced before anything is proposed.
const (
	MaxKeyBytes     = 1024
	MaxValueBytes   = 1 << 20
	maxRequestBytes = MaxValueBytes + 1024
)

// apiError is the JSON body of every 4xx/5xx answer.
type apiError struct {
	Status      int    `json:"-"`
	Message     string `json:"error"`
	Code        string `json:"code"`
	ModRevision *int64 `json:"mod_revision,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Message: fmt.Sprintf(format, a...)}
}

// errorFor maps controller errors to HTTP answers.
func errorFor(err error) *apiError {
	var ae *apiError
	var fe *fault.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &fe):
		return &apiError{Status: statusOf(fe.Kind), Code: fe.Code, Message: fe.Message}
	case errors.Is(err, ErrNoLeader):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "no_leader", Message: err.Error() + "; retry on another controller"}
	case errors.Is(err, ErrTimeout):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "timeout", Message: err.Error()}
	case errors.Is(err, ErrStopped):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "no_leader", Message: err.Error()}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// statusOf is the HTTP status of a kind of failure.
func statusOf(k fault.Kind) int {
	switch k {
	case fault.Invalid:
		return http.StatusBadRequest
	case fault.NotFound:
		return http.StatusNotFound
	case fault.Conflict:
		return http.StatusConflict
	case fault.Unavailable, fault.Timeout:
		return http.StatusServiceUnavailable
	case fault.NoAnswer:
		return http.StatusGatewayTimeout
	case fault.Limit:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, err error) {
	ae := errorFor(err)
	writeJSON(w, ae.Status, ae)
}

func (c *Controller) startHTTP() error {
	if c.cfg.APITokenFile != "" {
		b, err := os.ReadFile(c.cfg.APITokenFile)
		if err != nil {
			return fmt.Errorf("read API token file: %w", err)
		}
		c.token = []byte(strings.TrimSpace(string(b)))
		if len(c.token) == 0 {
			return fmt.Errorf("API token file %s is empty", c.cfg.APITokenFile)
		}
	}
	host, _, err := net.SplitHostPort(c.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("bad --http-addr %q: %w", c.cfg.HTTPAddr, err)
	}
	if c.token == nil && !isLoopback(host) {
		if !c.cfg.HTTPInsecure {
			return fmt.Errorf("refusing to serve the API on %s without --api-token-file; use a loopback address, set a token, or pass --http-insecure", c.cfg.HTTPAddr)
		}
		c.log.Warn("API is open to the network without a token (--http-insecure)", "http_addr", c.cfg.HTTPAddr)
	}
	ln, err := net.Listen("tcp", c.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", c.cfg.HTTPAddr, err)
	}
	c.httpLn = ln
	c.http = &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := c.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("HTTP server stopped", "err", err)
		}
	}()
	if c.token == nil {
		c.log.Info("API has no token: listening on loopback only", "http_addr", ln.Addr().String())
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HTTPAddr returns the address the API listens on ("" without HTTP).
func (c *Controller) HTTPAddr() string {
	if c.httpLn == nil {
		return ""
	}
	return c.httpLn.Addr().String()
}

// Handler returns the API with auth and metrics applied.
func (c *Controller) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", c.handleReadyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("PUT /v1/kv/{key...}", c.handlePut)
	mux.HandleFunc("GET /v1/kv/{key...}", c.handleGet)
	mux.HandleFunc("DELETE /v1/kv/{key...}", c.handleDelete)
	mux.HandleFunc("GET /v1/cluster", c.handleClusterWithWorkers)
	mux.HandleFunc("GET /v1/workers", c.handleWorkers)
	mux.HandleFunc("GET /v1/workers/{id}", c.handleWorker)
	mux.HandleFunc("GET /v1/controllers", c.leaderOnly(c.handleListControllers))
	mux.HandleFunc("POST /v1/controllers", c.leaderOnly(c.handleAddController))
	mux.HandleFunc("DELETE /v1/controllers/{id}", c.leaderOnly(c.handleRemoveController))
	mux.HandleFunc("POST /v1/controllers/{id}/transfer-leader", c.leaderOnly(c.handleTransferLeader))
	mux.HandleFunc("GET /v1/snapshot", c.handleSnapshot)
	c.registerCoordRoutes(mux) // leases, watches, locks, elections, services (http_coord.go)
	c.registerJobRoutes(mux)   // jobs, allocations, logs, drain (http_jobs.go)
	c.registerUIRoutes(mux)    // dashboard under /ui/, / redirects there, GET /v1/events (http_ui.go)
	if c.cfg.EnablePprof {
		registerPprof(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, &apiError{Code: "not_found",
			Message: fmt.Sprintf("no route for %s %s; see docs/API.md", r.Method, r.URL.Path)})
	})
	return c.instrument(c.auth(mux))
}

func (c *Controller) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.token != nil && !isOpenPath(r.URL.Path) {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), c.token) != 1 {
				writeJSON(w, http.StatusUnauthorized, &apiError{Code: "unauthorized",
					Message: "missing or wrong API token: send Authorization: Bearer <token>"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// isOpenPath: probes, metrics and the dashboard's static files (the page
// sends the token the user enters with its API calls) need no token.
func isOpenPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/metrics" || p == "/" || p == "/ui" || strings.HasPrefix(p, "/ui/")
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (full-duplex
// keep-alive streams).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *Controller) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		c.met.httpDuration.WithLabelValues(route, strconv.Itoa(rec.status)).Observe(time.Since(start).Seconds())
	})
}
