package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/transport"
)

// peerBase is the base URL at which this controller reaches controller
// id: over the mutual-TLS cluster link when there is one (always, outside
// the API's own unit tests), so a forwarded token never crosses the network
// in clear. ok is false when id cannot be reached yet.
func (s *Server) peerBase(id uint64) (base string, ok bool) {
	if s.cfg.PeerTransport != nil {
		return transport.PeerURL(id), id != 0
	}
	_, httpAddr := s.cluster.MemberAddress(id)
	return "http://" + httpAddr, id != 0 && httpAddr != ""
}

// peerClient is an HTTP client to other controllers with a timeout
// (0: none, for relayed streams).
func (s *Server) peerClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: s.cfg.PeerTransport}
}

// ServePeers serves the API to other controllers on ln (their forwarded
// requests, over the cluster link) until Shutdown. Requests still carry
// their caller's token and pass the same checks.
func (s *Server) ServePeers(ln net.Listener) {
	served := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_http_peer_requests_total",
		Help: "API requests other controllers sent this one over the cluster link (forwarded to the leader, log relays, dashboard peer views)."})
	if s.cfg.Registry != nil {
		s.cfg.Registry.MustRegister(served)
	}
	srv := s.newHTTPServer()
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Inc()
		if h, ok := s.cfg.PeerRoutes[r.URL.Path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
	s.peerMu.Lock()
	s.peerHTTP = srv
	s.peerMu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("peer API server failed", "err", err)
		}
	}()
}

// shutdownPeers stops ServePeers' server.
func (s *Server) shutdownPeers(ctx context.Context) error {
	s.peerMu.Lock()
	srv := s.peerHTTP
	s.peerMu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// leaderRequest is r replayed at controller lead: marked as forwarded (so
// it is not bounced again) and with the client's token.
func (s *Server) leaderRequest(r *http.Request, method string, lead uint64, body io.Reader) (*http.Request, error) {
	base, ok := s.peerBase(lead)
	if !ok {
		return nil, errors.New("the leader's address is not known yet; retry")
	}
	req, err := http.NewRequestWithContext(r.Context(), method, base+r.URL.RequestURI(), body)
	if err != nil {
		return nil, err // unwrapped: its text is the answer's message, as before
	}
	req.Header.Set(forwardedHeader, strconv.FormatUint(s.cfg.NodeID, 10))
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	return req, nil
}
