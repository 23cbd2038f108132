// Package api is the controller's HTTP API and dashboard routes: it
// decodes and validates requests, calls the controller's parts through
// the small interfaces it declares (backend.go) and encodes answers. It is
// the only place that knows HTTP status codes: domain errors (fault.Error,
// metadata's errors) become statuses in errorFor. It never sees raft
// types or another package's locks.
package api

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
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
	// OldestRevision is set for a watch refused as too old (410).
	OldestRevision *int64 `json:"oldest_revision,omitempty"`
	// Fields names every invalid field of a refused job spec.
	Fields []metadata.FieldError `json:"fields,omitempty"`
	// Permission names what a 403 lacked (acl.go).
	Permission *permissionJSON `json:"permission,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// httpError is an answer with status and code that says what to do.
func httpError(status int, code, format string, a ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

func badRequest(format string, a ...any) *apiError {
	return httpError(http.StatusBadRequest, "bad_request", format, a...)
}

func notFound(code, format string, a ...any) *apiError {
	return httpError(http.StatusNotFound, code, format, a...)
}

func tooLarge(format string, a ...any) *apiError {
	return httpError(http.StatusRequestEntityTooLarge, "too_large", format, a...)
}

// notLeader says a request that needs the leader could not reach it.
func notLeader(format string, a ...any) *apiError {
	return httpError(http.StatusServiceUnavailable, "not_leader", format, a...)
}

// errorFor maps controller errors to HTTP answers.
func errorFor(err error) *apiError {
	var ae *apiError
	var fe *fault.Error
	var we *WatchError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &fe):
		return &apiError{Status: statusOf(fe.Kind), Code: fe.Code, Message: fe.Message}
	case errors.As(err, &we):
		oldest := we.Oldest
		return &apiError{Status: http.StatusGone, Code: we.Code, Message: we.Message, OldestRevision: &oldest}
	case errors.Is(err, fault.ErrNoLeader):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "no_leader", Message: err.Error() + "; retry on another controller"}
	case errors.Is(err, fault.ErrTimeout):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "timeout", Message: err.Error()}
	case errors.Is(err, fault.ErrStopped):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "no_leader", Message: err.Error()}
	case errors.Is(err, metadata.ErrACLChanged):
		// The write was judged on ACLs that changed before it reached the
		// log (a follower had not applied the change yet); nothing changed.
		return &apiError{Status: http.StatusServiceUnavailable, Code: "acl_changed",
			Message: "access control changed while this request was on its way to the log; nothing was changed, retry it"}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers err with the status errorFor gives it. Handlers
// return their errors to handle, which calls it; auth calls it before any
// handler runs.
func writeError(w http.ResponseWriter, err error) {
	ae := errorFor(err)
	writeJSON(w, ae.Status, ae)
}

// handlerFunc is a handler that returns its answer rather than writing
// it, so every error reaches the client through errorFor. A (nil, nil)
// return means the handler wrote the response itself (a stream, raw bytes
// or a proxied answer).
type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

// reply is an answer whose status is not 200.
type reply struct {
	status int
	body   any
}

// created is a 201 answer.
func created(v any) reply { return reply{status: http.StatusCreated, body: v} }

// unavailable is a 503 answer with a body of its own (readyz).
func unavailable(v any) reply { return reply{status: http.StatusServiceUnavailable, body: v} }

// handle adapts h: an error is written by writeError, a value as JSON
// (200, or the status a reply carries).
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h(w, r)
		if err != nil {
			writeError(w, err)
			return
		}
		switch v := v.(type) {
		case nil: // written by h
		case reply:
			writeJSON(w, v.status, v.body)
		default:
			writeJSON(w, http.StatusOK, v)
		}
	}
}

// Config configures the API.
type Config struct {
	// NodeID is this controller's id (in answers and forwarded headers).
	NodeID uint64
	// HTTPAddr is where to listen, e.g. 127.0.0.1:8080.
	HTTPAddr string
	// AdvertiseAddr, when set, is the address announced to the cluster
	// (--http-advertise-addr): browsers are sent there, so its host joins
	// the default AllowedHosts.
	AdvertiseAddr string
	// APITokenFile holds the bearer token every request but the probes,
	// metrics and static dashboard files must carry.
	APITokenFile string
	// HTTPInsecure allows a non-loopback address without a token.
	HTTPInsecure bool
	// AllowedHosts are the Host names (and IPs) the public listener answers
	// to (--http-allowed-hosts; "*" allows any); empty means
	// DefaultAllowedHosts(HTTPAddr) and the HTTPS certificate's names
	// (browser.go).
	AllowedHosts []string
	// MetricsAddr, when set, is a second listener serving only GET
	// /metrics, /healthz and /readyz; the API port then answers /metrics
	// with 404 (metrics_http.go). Empty serves /metrics on the API port.
	MetricsAddr string
	// MetricsTokenFile, when set, holds the bearer token GET /metrics
	// needs (the API token is accepted too), wherever it is served.
	MetricsTokenFile string
	// EnablePprof serves /debug/pprof (behind the token).
	EnablePprof bool
	// RequestTimeout bounds forwarded requests and give-up proposals.
	RequestTimeout time.Duration
	// MaxConns bounds the API listener's open connections (0:
	// DefaultMaxConns); IdleTimeout closes idle keep-alive connections
	// (0: DefaultIdleTimeout); ReadTimeout bounds reading a request's
	// headers and body (0: DefaultReadTimeout). See newHTTPServer.
	MaxConns    int
	IdleTimeout time.Duration
	ReadTimeout time.Duration
	// TickInterval paces waits for a new leader's address.
	TickInterval time.Duration
	// Registry serves /metrics and receives the API's own metrics.
	Registry *prometheus.Registry
	// TLS, when set, serves the API (and the metrics listener) over HTTPS.
	// nil serves plain HTTP, which a non-loopback address refuses unless
	// HTTPInsecure says so.
	TLS *tls.Config
	// PeerTransport carries requests to other controllers (forwarding to
	// the leader, log relay, the dashboard's peer views) over the
	// mutual-TLS cluster link, addressed by transport.PeerURL. nil sends
	// them to the peers' HTTP addresses: only the API's unit tests do.
	PeerTransport http.RoundTripper
	// PeerRoutes are handlers, by exact path, served on the cluster link
	// only (ServePeers), before the API's routes: internal calls between
	// controllers that no API token may make (the ZooKeeper server's
	// session keep-alives).
	PeerRoutes map[string]http.Handler
	// Stopping is closed when the controller begins to stop: long-lived
	// streams end.
	Stopping <-chan struct{}
	Logger   *slog.Logger
	// Limits are checked before proposing (quota.go).
	Limits Limits
}

// Server serves the API over a Backend.
type Server struct {
	cfg          Config
	cluster      Cluster
	store        Store
	workers      Workers
	coord        Coordination
	hub          Watches
	backups      Backups
	log          *slog.Logger
	httpDuration *prometheus.HistogramVec
	token        []byte
	metricsToken []byte // metrics_http.go
	http         *http.Server
	httpLn       net.Listener
	metricsHTTP  *http.Server // nil unless cfg.MetricsAddr is set
	metricsLn    net.Listener
	peerMu       sync.Mutex
	peerHTTP     *http.Server // ServePeers (peer.go)
	peerAsks     peerAsks     // the dashboard's view of the other controllers (ui_peers.go)
	stopc        <-chan struct{}
	browser      browserGuard // Host, Origin and client-header checks (browser.go)
	aclCaughtUp  atomic.Bool  // the ACL state is known current (acl.go, aclCurrent)
	watchesBy    tokenCounts  // open watches per token (acl_limits.go)
	streams      kvStreams    // open KV streams (kvstream.go)
}

// New returns a Server; it serves nothing until Listen (or use Handler).
// It registers its metrics on cfg.Registry.
func New(cfg Config, b Backend) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, cluster: b.Cluster, store: b.Store, workers: b.Workers, coord: b.Coordination,
		hub: b.Watches, backups: b.Backups, log: cfg.Logger, stopc: cfg.Stopping,
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "corral_http_request_duration_seconds", Help: "API request duration by route and status code.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"route", "code"}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.httpDuration)
	}
	return s
}

// Listen reads the tokens, checks the address is safe to serve on and
// starts serving in the background: the API and, with cfg.MetricsAddr,
// the metrics listener (metrics_http.go), which is bound first so that
// nothing serves if either address cannot be bound.
func (s *Server) Listen() error {
	if err := s.listenMetrics(); err != nil {
		return err
	}
	if err := s.startHTTP(); err != nil {
		_ = s.shutdownMetrics(context.Background()) // bound, never served
		s.metricsLn = nil
		return err
	}
	s.serveMetrics()
	return nil
}

// Shutdown stops the HTTP server, letting requests in flight finish
// within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.streams.closeAll() // hijacked: http.Server.Shutdown does not see them
	peerErr := s.shutdownPeers(ctx)
	metricsErr := s.shutdownMetrics(ctx)
	if s.http == nil {
		return errors.Join(peerErr, metricsErr)
	}
	return errors.Join(s.http.Shutdown(ctx), peerErr, metricsErr)
}

// loadToken reads cfg.APITokenFile and cfg.MetricsTokenFile, if set,
// into the tokens auth and the metrics guard check.
func (s *Server) loadToken() error {
	if s.cfg.APITokenFile != "" {
		tok, err := ReadTokenFile(s.cfg.APITokenFile, "API token")
		if err != nil {
			return err
		}
		s.token = tok
	}
	return s.loadMetricsToken() // metrics_http.go
}

func (s *Server) startHTTP() error {
	if err := s.loadToken(); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("bad --http-addr %q: %w", s.cfg.HTTPAddr, err)
	}
	if s.cfg.TLS == nil && !isLoopback(host) {
		if !s.cfg.HTTPInsecure {
			return fmt.Errorf("refusing to serve the API on %s in plain HTTP, where tokens would cross the network in clear; set --http-tls-cert and --http-tls-key, use a loopback address, or pass --http-insecure", s.cfg.HTTPAddr)
		}
		s.log.Warn("API serves plain HTTP to the network (--http-insecure): tokens cross it in clear", "http_addr", s.cfg.HTTPAddr)
	}
	if s.token == nil && !isLoopback(host) {
		if !s.cfg.HTTPInsecure {
			return fmt.Errorf("refusing to serve the API on %s without --api-token-file; use a loopback address, set a token, or pass --http-insecure", s.cfg.HTTPAddr)
		}
		s.log.Warn("API is open to the network without a token (--http-insecure)", "http_addr", s.cfg.HTTPAddr)
	}
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", s.cfg.HTTPAddr, err)
	}
	s.httpLn = ln
	// Past MaxConns, connections wait in the kernel's accept backlog until
	// one closes (idle ones close after IdleTimeout).
	ln = netutil.LimitListener(ln, cmp.Or(s.cfg.MaxConns, DefaultMaxConns))
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.http = s.newHTTPServer()
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP server stopped", "err", err)
		}
	}()
	if s.token == nil {
		s.log.Info("API has no token: listening on loopback only", "http_addr", ln.Addr().String())
	}
	return nil
}

// HTTP server bounds (Config.MaxConns, IdleTimeout, ReadTimeout).
const (
	DefaultMaxConns    = 1024
	DefaultIdleTimeout = 2 * time.Minute
	DefaultReadTimeout = 30 * time.Second
	// readHeaderTimeout bounds reading a request's headers.
	readHeaderTimeout = 10 * time.Second
)

// newHTTPServer is the API's server, for clients and for peers alike.
//
// IdleTimeout closes keep-alive connections that carry no request, and
// the API listener (startHTTP) accepts at most MaxConns connections.
// http.Server.ReadTimeout is left unset on purpose: net/http applies it
// to every read of the request body, and the lease keep-alive stream
// (POST /v1/leases/keepalive/stream, full duplex) reads its body for as
// long as it lasts, so the stream would end after ReadTimeout. (GET
// streams, watches, GET /v1/events and followed logs, are safe either
// way: net/http clears the deadline once a request's body is read.)
// Instead readDeadline gives each request that has a body a read
// deadline of ReadTimeout for that body (headers have readHeaderTimeout),
// exempting the keep-alive stream.
func (s *Server) newHTTPServer() *http.Server {
	return &http.Server{Handler: s.readDeadline(s.Handler()), ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout: cmp.Or(s.cfg.IdleTimeout, DefaultIdleTimeout)}
}

// keepAliveStreamPath reads its body for as long as the stream lasts.
const keepAliveStreamPath = "/v1/leases/keepalive/stream"

// readDeadline bounds how long reading a request's body may take
// (newHTTPServer): a client that trickles a body cannot hold a
// connection and a handler for longer than ReadTimeout.
func (s *Server) readDeadline(next http.Handler) http.Handler {
	d := cmp.Or(s.cfg.ReadTimeout, DefaultReadTimeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody || r.URL.Path == keepAliveStreamPath {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r) // not a net/http connection (tests)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the connection's read deadline once the body is
// read, so the server's watch for a departed client is not cut short
// while the handler runs.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr returns the address the API listens on ("" before Listen).
func (s *Server) Addr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// Handler returns the API with auth and metrics applied.
func (s *Server) Handler() http.Handler {
	mux := s.routeMux()
	return s.instrument(s.leaderHint(s.browserSafe(mux.ServeMux, s.auth(mux)))) // leaderhint.go, browser.go, acl.go
}

// routeMux registers every route, each behind its permission (acl.go).
func (s *Server) routeMux() *routeMux {
	mux := s.newRouteMux() // acl.go
	mux.HandleFunc("GET /healthz", s.handle(handleHealthz))
	mux.HandleFunc("GET /readyz", s.handle(s.handleReadyz))
	mux.Handle("GET /metrics", s.apiPortMetrics()) // metrics_http.go
	mux.HandleFunc("PUT /v1/kv/{key...}", s.handle(s.handlePut))
	mux.HandleFunc("GET /v1/kv/{key...}", s.handle(s.handleGet))
	mux.HandleFunc("DELETE /v1/kv/{key...}", s.handle(s.handleDelete))
	mux.HandleFunc("GET /v1/kvstream", s.handle(s.handleKVStream)) // kvstream.go
	mux.HandleFunc("GET /v1/cluster", s.handle(s.handleClusterWithWorkers))
	mux.HandleFunc("GET /v1/workers", s.handle(s.handleWorkers))
	mux.HandleFunc("GET /v1/workers/{id}", s.handle(s.handleWorker))
	mux.HandleFunc("GET /v1/controllers", s.leaderOnly(s.handleListControllers))
	mux.HandleFunc("POST /v1/controllers", s.leaderOnly(s.handleAddController))
	mux.HandleFunc("DELETE /v1/controllers/{id}", s.leaderOnly(s.handleRemoveController))
	mux.HandleFunc("POST /v1/controllers/{id}/transfer-leader", s.leaderOnly(s.handleTransferLeader))
	mux.HandleFunc("GET /v1/snapshot", s.handle(s.handleSnapshot))
	s.registerCoordRoutes(mux) // leases, watches, locks, elections, services (http_coord.go)
	s.registerJobRoutes(mux)   // jobs, allocations, logs, drain (http_jobs.go)
	s.registerCertRoutes(mux)  // the certificate deny-list (certs.go)
	s.registerTokenRoutes(mux) // worker join tokens (tokens.go)
	s.registerACLRoutes(mux)   // policies and tokens (acl_routes.go)
	s.registerZNodeRoutes(mux) // the ZooKeeper port's znode tree, read-only (znodes.go)
	s.registerUIRoutes(mux)    // dashboard under /ui/, / redirects there, GET /v1/events (http_ui.go)
	if s.cfg.EnablePprof {
		registerPprof(mux)
	}
	mux.HandleFunc("/", s.handle(func(_ http.ResponseWriter, r *http.Request) (any, error) {
		return nil, notFound("not_found", "no route for %s %s; see docs/API.md", r.Method, r.URL.Path)
	}))
	return mux
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

func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		s.httpDuration.WithLabelValues(route, strconv.Itoa(rec.status)).Observe(time.Since(start).Seconds())
	})
}
