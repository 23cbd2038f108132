package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Browser safety (docs/API.md "Browser safety"). A web page the operator
// opens can make the browser send requests to the API: to a loopback
// address directly (cross-site request forgery) or, through a domain of
// its own that it re-resolves to the API's address, as a same-origin page
// (DNS rebinding). Three checks, applied on the public listener (Listen)
// before the token check, stop both:
//
//   - Host: the request's Host (its port dropped) must be in the allow-list
//     (Config.AllowedHosts, --http-allowed-hosts; by default the listen
//     address's host, localhost, 127.0.0.1, ::1 and the names in the HTTPS
//     certificate), else 421 host_not_allowed. A rebinding page sends its
//     own domain as Host.
//   - Origin: a request carrying an Origin header must come from the API's
//     own origin (scheme://host:port the request reached), else 403
//     origin_not_allowed. Same-origin dashboard requests pass.
//   - Client header: a request with any method but GET, HEAD and OPTIONS
//     must carry X-Corral-Client (any value; ClientHeader; controllers'
//     forwarded requests carry X-Corral-Forwarded, as good) or, on routes
//     whose body is JSON, Content-Type: application/json, else 403
//     client_header_required. A page can send neither cross-origin without
//     a CORS preflight, which the API never grants. Routes with a raw body
//     (rawBodyRoutes) need the header.
//
// The probes and GET /metrics are exempt (load balancers and Prometheus
// reach them by any name). Requests other controllers send over the cluster
// link (ServePeers; Host controller-N.corral, mutual TLS) are not checked,
// nor is the handler when served by anything but Listen's server (the
// package's unit tests serve Handler() directly). Every refusal is a JSON
// error counted in corral_http_requests_refused_total{reason}.

// ClientHeader marks a request as sent by a corral client (the CLI, the Go
// client, the dashboard): browsers cannot add it to a cross-origin request
// without a preflight. Its value names the client; any non-empty value is
// accepted.
const ClientHeader = "X-Corral-Client"

// Reasons a request is refused (the reason label of the refusal counter).
const (
	refusedHost   = "host"
	refusedOrigin = "origin"
	refusedClient = "client_header"
)

// rawBodyRoutes are the state-changing routes whose body is not JSON: for
// them Content-Type: application/json proves nothing, so they need
// ClientHeader. Every other state-changing route takes a JSON body (POST
// /v1/jobs takes JSON or YAML: YAML needs the header) or none.
var rawBodyRoutes = map[string]bool{
	"PUT /v1/kv/{key...}":              true, // the raw value
	"POST /v1/leases/keepalive/stream": true, // newline-delimited JSON
	"GET /v1/kvstream":                 true, // binary frames that write (kvstream.go)
}

// browserGuard holds the checks' state, built on first use.
type browserGuard struct {
	once    sync.Once
	refused *prometheus.CounterVec
	anyHost bool            // AllowedHosts has "*"
	hosts   map[string]bool // canonical host names and IPs
	byCert  bool            // also allow the HTTPS certificate's names
}

// refusal is a request the checks refuse, and why.
type refusal struct {
	reason string
	err    *apiError
}

func (g *browserGuard) init(s *Server) {
	g.once.Do(func() {
		g.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_http_requests_refused_total",
			Help: "API requests refused before any handler ran, by reason: host (Host not in --http-allowed-hosts), " +
				"origin (a foreign Origin), client_header (a state-changing request without X-Corral-Client or JSON)."},
			[]string{"reason"})
		if s.cfg.Registry != nil {
			if err := s.cfg.Registry.Register(g.refused); err != nil {
				var are prometheus.AlreadyRegisteredError
				if errors.As(err, &are) {
					if c, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
						g.refused = c
					}
				}
			}
		}
		for _, r := range []string{refusedHost, refusedOrigin, refusedClient} {
			g.refused.WithLabelValues(r)
		}
		g.hosts = map[string]bool{}
		list := s.cfg.AllowedHosts
		if len(list) == 0 {
			list = DefaultAllowedHosts(s.cfg.HTTPAddr)
			if host, _, err := net.SplitHostPort(s.cfg.AdvertiseAddr); err == nil {
				list = append(list, host) // where the dashboard sends browsers
			}
			g.byCert = s.cfg.TLS != nil
		}
		for _, h := range list {
			h = canonicalHost(h)
			if h == "*" {
				g.anyHost = true
			}
			if h != "" {
				g.hosts[h] = true
			}
		}
	})
}

// DefaultAllowedHosts is the Host allow-list when --http-allowed-hosts is
// not set (with the --http-advertise-addr host, added by the caller):
// localhost, 127.0.0.1, ::1 and the host of the listen address;
// for an unspecified listen address (0.0.0.0, ::) this machine's name and
// interface addresses instead. The HTTPS certificate's names are allowed
// too (checked per request, so a reloaded certificate counts).
func DefaultAllowedHosts(listenAddr string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		host = listenAddr
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return append(hosts, host)
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		hosts = append(hosts, name)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				hosts = append(hosts, n.IP.String())
			}
		}
	}
	return hosts
}

// browserSafe applies the checks to the requests Listen's server serves;
// mux tells which route a request is for.
func (s *Server) browserSafe(mux *http.ServeMux, next http.Handler) http.Handler {
	s.browser.init(s)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.publicRequest(r) || isProbeOrMetrics(r) {
			next.ServeHTTP(w, r)
			return
		}
		if ref := s.checkBrowser(mux, r); ref != nil {
			s.browser.refused.WithLabelValues(ref.reason).Inc()
			writeError(w, ref.err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// publicRequest tells whether r reached the public listener's server, the
// one Listen started (not the peer server, not a test's server).
func (s *Server) publicRequest(r *http.Request) bool {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	return srv != nil && srv == s.http
}

func isProbeOrMetrics(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	return p == "/healthz" || p == "/readyz" || p == "/metrics"
}

// checkBrowser is nil when r passes the three checks.
func (s *Server) checkBrowser(mux *http.ServeMux, r *http.Request) *refusal {
	if !s.hostAllowed(r.Host) {
		return &refusal{refusedHost, httpError(http.StatusMisdirectedRequest, "host_not_allowed",
			"Host %q is not one this API answers to (a page re-resolving its own domain to this address, DNS rebinding, "+
				"looks like this); use an allowed name or add it to --http-allowed-hosts", r.Host)}
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
		return &refusal{refusedOrigin, httpError(http.StatusForbidden, "origin_not_allowed",
			"Origin %q is not this API's origin %s: requests from other web pages are refused (the dashboard is served at /ui/)",
			o, ownOrigin(r))}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		// The KV stream is a GET that then writes: it needs the header too
		// (a browser cannot send its Upgrade either, but one guard should
		// not rest on another).
		if r.URL.Path != "/v1/kvstream" {
			return nil
		}
	}
	if r.Header.Get(ClientHeader) != "" || r.Header.Get(forwardedHeader) != "" {
		return nil
	}
	_, pattern := mux.Handler(r)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/json" && !rawBodyRoutes[pattern] {
		return nil
	}
	if rawBodyRoutes[pattern] {
		return &refusal{refusedClient, httpError(http.StatusForbidden, "client_header_required",
			"%s %s needs the header %s: <client name> (any value; the corral CLI, Go client and dashboard send it), "+
				"which a web page cannot send from another origin", r.Method, r.URL.Path, ClientHeader)}
	}
	return &refusal{refusedClient, httpError(http.StatusForbidden, "client_header_required",
		"%s %s with Content-Type %q refused: a web page can send that from any origin; send Content-Type: "+
			"application/json or the header %s: <client name> (the corral CLI, Go client and dashboard send it)",
		r.Method, r.URL.Path, r.Header.Get("Content-Type"), ClientHeader)}
}

// hostAllowed tells whether a request's Host may be answered.
func (s *Server) hostAllowed(hostport string) bool {
	g := &s.browser
	if g.anyHost {
		return true
	}
	h := canonicalHost(hostport)
	if h == "" {
		return false
	}
	if g.hosts[h] {
		return true
	}
	return g.byCert && certCovers(s.cfg.TLS, h)
}

// certCovers tells whether the certificate cfg serves is valid for host.
func certCovers(cfg *tls.Config, host string) bool {
	var cert *tls.Certificate
	switch {
	case cfg.GetCertificate != nil:
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: host})
		if err != nil {
			return false
		}
		cert = c
	case len(cfg.Certificates) > 0:
		cert = &cfg.Certificates[0]
	}
	if cert == nil || len(cert.Certificate) == 0 {
		return false
	}
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return false
		}
	}
	return leaf.VerifyHostname(host) == nil
}

// canonicalHost is hostport's host: port and IPv6 brackets dropped, lower
// case, no trailing dot.
func canonicalHost(hostport string) string {
	h := strings.TrimSpace(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else if inner, ok := strings.CutPrefix(h, "["); ok {
		if h, ok = strings.CutSuffix(inner, "]"); !ok {
			return "" // "[::1": malformed
		}
	}
	if strings.ContainsAny(h, "[]") || (strings.Contains(h, ":") && net.ParseIP(h) == nil) {
		return "" // "[]", "[localhost]" without the brackets' meaning, "a:b:c"
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// ownOrigin is the origin r reached: scheme://host[:port].
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// sameOrigin tells whether origin is r's own origin, default ports and
// case aside. "null" and anything unparsable are foreign.
func sameOrigin(origin string, r *http.Request) bool {
	o, err := url.Parse(origin)
	if err != nil || o.Scheme == "" || o.Host == "" || o.Path != "" || o.User != nil {
		return false
	}
	own, err := url.Parse(ownOrigin(r))
	if err != nil {
		return false
	}
	return strings.EqualFold(o.Scheme, own.Scheme) && originHostPort(o) == originHostPort(own)
}

// originHostPort is u's host:port with the scheme's default port filled in.
func originHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(canonicalHost(u.Hostname()), port)
}
