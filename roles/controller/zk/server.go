package zk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
	"github.com/corral-dev/corral/roles/controller/zk/watch"
)

// Config configures a Server. The zero value of every field but the
// listen address has a usable default (see New).
type Config struct {
	// Addr is the listen address of ListenAndServe ("127.0.0.1:2181").
	Addr string
	// MinSessionTimeout and MaxSessionTimeout bound the negotiated
	// session timeout (defaults 4s and 40s, ZooKeeper's for a 2s tick).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxConns bounds the open client connections (default 60000);
	// further ones are closed at once.
	MaxConns int
	// MaxWatchesPerConn bounds the watches of one connection (default
	// 100000).
	MaxWatchesPerConn int
	// MaxRequestBytes bounds a request frame (default
	// jute.DefaultMaxFrame plus 1 KiB for the request's header and path,
	// so a znode of the largest data size fits).
	MaxRequestBytes int
	// MaxQueuedFrames and MaxQueuedBytes bound a connection's outbound
	// queue (defaults 1000 frames, 16 MiB); beyond, it is closed.
	MaxQueuedFrames int
	MaxQueuedBytes  int64
	// FourLetterWords is the allow-list of four-letter words
	// (ZooKeeper's 4lw.commands.whitelist). nil means the default:
	// ruok, srvr, isro and mntr (counts only; stat and cons list client
	// addresses, conf the configuration, so they are opt-in). "*" allows
	// every word this server implements.
	FourLetterWords []string
	// DisableExtendedTypes refuses TTL nodes (createTTL) with
	// Unimplemented, as ZooKeeper does unless
	// zookeeper.extendedTypesEnabled is set. TTL nodes are on by default:
	// Curator and kazoo users ask for them.
	DisableExtendedTypes bool
	// ContainerCheckInterval is how often the leader deletes empty
	// containers and expired TTL nodes (default 60s, ZooKeeper's; each
	// pass walks the whole tree, see reapLoop).
	ContainerCheckInterval time.Duration
	// ProposeTimeout bounds one write (default 10s); a write whose outcome
	// is unknown closes the connection, so the client sees ConnectionLoss.
	ProposeTimeout time.Duration
	// ServerID and Version are shown by srvr, stat, mntr and conf.
	ServerID, Version string
	// TLS, when set, makes Serve speak TLS (ZooKeeper's secureClientPort).
	TLS *tls.Config
	// Logger receives one line per event (default slog.Default()).
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 4 * time.Second
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 40 * time.Second
	}
	if c.MaxSessionTimeout < c.MinSessionTimeout {
		return fmt.Errorf("zk: MaxSessionTimeout %v is below MinSessionTimeout %v", c.MaxSessionTimeout, c.MinSessionTimeout)
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 60000
	}
	if c.MaxWatchesPerConn <= 0 {
		c.MaxWatchesPerConn = 100000
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = jute.DefaultMaxFrame + 1024
	}
	if c.MaxQueuedFrames <= 0 {
		c.MaxQueuedFrames = 1000
	}
	if c.MaxQueuedBytes <= 0 {
		c.MaxQueuedBytes = 16 << 20
	}
	if c.FourLetterWords == nil {
		c.FourLetterWords = []string{"ruok", "srvr", "isro", "mntr"}
	}
	if c.ContainerCheckInterval <= 0 {
		c.ContainerCheckInterval = time.Minute
	}
	if c.ProposeTimeout <= 0 {
		c.ProposeTimeout = 10 * time.Second
	}
	if c.Version == "" {
		c.Version = "corral"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Server is a ZooKeeper-protocol server over a Backend.
type Server struct {
	cfg     Config
	b       Backend
	log     *slog.Logger
	met     *metrics
	words   map[string]bool
	watches *watch.Registry
	started time.Time

	mu        sync.RWMutex
	conns     map[watch.ConnID]*conn
	sessions  map[int64]map[*conn]struct{} // sessions with a connection here
	listeners map[net.Listener]struct{}
	closed    bool
	nextConn  atomic.Uint64

	// fired is the highest zxid whose watch events Applied has queued;
	// a read whose answer shows a newer change waits for it, so a client
	// sees a watch event before the data that fired it (ZooKeeper's
	// ordering guarantee). See waitFired.
	firedMu   sync.Mutex
	firedCond *sync.Cond
	fired     atomic.Int64 // written under firedMu

	keep      keepAlive
	reapTicks atomic.Uint64 // reaper passes, led or not (for tests)
	// beforeReply, set by tests only, runs after a request was handled
	// and before its reply is queued: the window where a change's watch
	// event could overtake the reply.
	beforeReply atomic.Pointer[func(jute.Request)]

	quit chan struct{}
	// binds queue the resumes waiting for their bind (binder.go).
	binds  chan bindReq
	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a server over b; it serves nothing until Serve or
// ListenAndServe, but starts its keep-alive batcher and reaper now.
func New(cfg Config, b Backend) (*Server, error) {
	if b == nil {
		return nil, errors.New("zk: nil Backend")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	words, err := allowedWords(cfg.FourLetterWords)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, b: b, log: cfg.Logger.With("component", "zk"), words: words,
		watches:   watch.NewRegistry(cfg.MaxWatchesPerConn),
		started:   time.Now(),
		conns:     map[watch.ConnID]*conn{},
		sessions:  map[int64]map[*conn]struct{}{},
		listeners: map[net.Listener]struct{}{},
		quit:      make(chan struct{}),
		binds:     make(chan bindReq, maxQueuedBinds),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.firedCond = sync.NewCond(&s.firedMu)
	s.fired.Store(int64(b.AppliedIndex()))
	s.keep.active = map[int64]struct{}{}
	if s.met, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	s.wg.Add(3)
	go s.keepAliveLoop()
	go s.reapLoop()
	go s.bindLoop()
	return s, nil
}

// ListenAndServe listens on Config.Addr and serves until Close.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("zk: listen on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln (wrapped in TLS when Config.TLS is
// set) until Close or an accept error; it always closes ln.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	s.log.Info("zk: serving", "addr", ln.Addr().String())
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.quit:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of descriptors and the like: back off, do not spin.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			ln.Close()
			return fmt.Errorf("zk: accept: %w", err)
		}
		delay = 0
		s.accept(nc)
	}
}

// accept admits nc unless the server is full or closing.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closed || len(s.conns) >= s.cfg.MaxConns {
		full := !s.closed
		s.mu.Unlock()
		nc.Close()
		if full {
			s.met.refused.WithLabelValues("max_conns").Inc()
			s.log.Warn("zk: connection refused", "remote", nc.RemoteAddr().String(), "reason", "max_conns", "max", s.cfg.MaxConns)
		}
		return
	}
	c := newConn(s, nc, watch.ConnID(s.nextConn.Add(1)))
	s.conns[c.id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	s.met.connections.Inc()
	go func() {
		defer s.wg.Done()
		c.serve()
	}()
}

// Addr returns the address of one listener, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for ln := range s.listeners {
		return ln.Addr()
	}
	return nil
}

// Close stops the listeners, closes every connection (without ending
// their sessions: clients reconnect elsewhere) and waits for the
// server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.quit)
	s.cancel()
	for ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close("server closing")
	}
	s.firedMu.Lock()
	s.firedCond.Broadcast()
	s.firedMu.Unlock()
	s.wg.Wait()
	s.met.unregister()
	return nil
}

// unregister forgets a closed connection.
func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	if s.conns[c.id] != c {
		s.mu.Unlock()
		return
	}
	delete(s.conns, c.id)
	if sid := c.sessionID(); sid != 0 {
		if set := s.sessions[sid]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(s.sessions, sid)
				s.keep.forget(sid)
				s.met.sessions.Dec()
			}
		}
	}
	s.mu.Unlock()
	s.watches.DropConn(c.id)
	s.met.connections.Dec()
	s.met.watches.Set(float64(s.watches.Count()))
}

// bindSession records that c serves session sid and closes the older
// connections of that session here: the client moved to c.
func (s *Server) bindSession(c *conn, sid int64) {
	s.mu.Lock()
	if s.conns[c.id] != c {
		// Closed during its handshake: unregister ran already.
		s.mu.Unlock()
		return
	}
	set := s.sessions[sid]
	if set == nil {
		set = map[*conn]struct{}{}
		s.sessions[sid] = set
		s.keep.refreshed(s.b.Now(), sid) // granted or found just now
		s.met.sessions.Inc()
	}
	old := make([]*conn, 0, len(set))
	for o := range set {
		old = append(old, o)
	}
	set[c] = struct{}{}
	s.mu.Unlock()
	for _, o := range old {
		o.close("session moved to a newer connection")
	}
}

// connsOf returns the connections serving session sid here.
func (s *Server) connsOf(sid int64) []*conn {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*conn, 0, len(s.sessions[sid]))
	for c := range s.sessions[sid] {
		out = append(out, c)
	}
	return out
}

// Stats is a snapshot of the server's activity, for the dashboard and
// the four-letter words.
type Stats struct {
	Connections int
	Sessions    int
	Watches     int
	WatchPaths  int
	// Ops counts the requests served by op name since start.
	Ops      map[string]uint64
	Received uint64
	Sent     uint64
}

// Stats returns the server's current counts.
func (s *Server) Stats() Stats {
	s.mu.RLock()
	st := Stats{Connections: len(s.conns), Sessions: len(s.sessions)}
	s.mu.RUnlock()
	st.Watches, st.WatchPaths = s.watches.Count(), s.watches.Paths()
	st.Ops = s.met.opCounts()
	st.Received, st.Sent = s.met.received.Load(), s.met.sent.Load()
	return st
}

// timeoutCtx bounds one call to the Backend; Close cancels it, so a
// closing server does not wait out a proposal.
func (s *Server) timeoutCtx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, d)
}

func remoteHost(nc net.Conn) string {
	a := nc.RemoteAddr()
	if a == nil {
		return ""
	}
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return strings.TrimSpace(a.String())
	}
	return h
}
