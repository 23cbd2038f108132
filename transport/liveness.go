package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// The liveness link tells a controller at once that a peer's process has
// ended. Raft traffic runs over QUIC, on UDP, and a process killed with
// SIGKILL sends nothing there: its peers learn of it only when their
// election timeout runs out (0.7-1.4 s by default). A TCP connection, in
// contrast, is closed by the peer's kernel the moment its process ends, so
// each controller also listens on TCP at its cluster port and holds one
// connection to every peer's. ZooKeeper's followers notice a dead leader
// the same way, through its closed socket.
//
// A closed connection alone is not proof: the peer may have dropped it, or
// something on the path reset it. The watcher dials again at once; only a
// refused dial (nothing listens on the port any more) or an answer from
// another incarnation (the process restarted) counts as the peer's death;
// a reset redial is tried again (confirmDial).
// Anything else — a timeout, a failed handshake, a host that is gone
// without a word — proves nothing, and raft's election timeout stays the
// only judge. Both ends authenticate with the cluster's mutual TLS, so the
// incarnation a watcher compares comes from the controller its certificate
// names.

// ALPNLiveness is the TLS application protocol of the liveness link.
const ALPNLiveness = "corral-liveness/1"

const (
	// incarnationLen is the size of the random id a controller's process
	// sends on every liveness connection.
	incarnationLen = 16
	// maxLivenessConns bounds the open inbound connections of the TCP
	// listener: each peer holds two (the liveness link and its raft
	// message stream, raft_tcp.go), and the rest are refused until some
	// close.
	maxLivenessConns = 64
	// livenessDialTimeout bounds a dial and handshake of the link; the
	// confirming redial after a closed connection uses it too.
	livenessDialTimeout = time.Second
	// acceptRetry is the pause after a failed accept.
	acceptRetry = 50 * time.Millisecond
)

// PeerGoneHandler is what a Handler implements to hear that a peer's
// process ended (its liveness connection closed and the confirming redial
// was refused or reached a new incarnation). PeerGone must not block.
type PeerGoneHandler interface {
	PeerGone(id uint64)
}

// livenessServer accepts the liveness connections of the peers. It writes
// its incarnation on each and then only waits for the peer to close: the
// connection carries nothing else, and a peer that sends anything is
// dropped.
type livenessServer struct {
	ln          net.Listener
	conf        *tls.Config
	incarnation [incarnationLen]byte
	slots       chan struct{}

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	accepted int // connections taken in, for tests

	// onRaft serves a peer's raft message stream, the other protocol on
	// this listener (raft_tcp.go); set before serve runs.
	onRaft func(*tls.Conn)
}

// newLivenessServer listens on TCP at addr (the QUIC socket's address).
func newLivenessServer(addr string, conf *tls.Config) (*livenessServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &livenessServer{ln: ln, conf: conf, slots: make(chan struct{}, maxLivenessConns), conns: map[net.Conn]struct{}{}}
	if _, err := rand.Read(s.incarnation[:]); err != nil {
		ln.Close()
		return nil, err
	}
	return s, nil
}

// serve accepts until the listener is closed.
func (s *livenessServer) serve(wg *sync.WaitGroup) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (EMFILE...): wait a little, as
			// net/http does, rather than spin a core while it lasts.
			time.Sleep(acceptRetry)
			continue
		}
		select {
		case s.slots <- struct{}{}:
		default:
			c.Close() // full: every peer already holds one
			continue
		}
		if !s.track(c) {
			<-s.slots
			return
		}
		wg.Go(func() {
			defer func() { <-s.slots }()
			defer s.untrack(c)
			s.handle(c)
		})
	}
}

func (s *livenessServer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	s.accepted++
	return true
}

func (s *livenessServer) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// handle authenticates the peer, sends the incarnation and waits for the
// peer to close.
func (s *livenessServer) handle(c net.Conn) {
	tc := tls.Server(c, s.conf)
	_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return
	}
	if tc.ConnectionState().NegotiatedProtocol == ALPNRaftTCP && s.onRaft != nil {
		_ = tc.SetDeadline(time.Time{})
		s.onRaft(tc) // raft_tcp.go
		return
	}
	if _, err := tc.Write(s.incarnation[:]); err != nil {
		return
	}
	_ = tc.SetDeadline(time.Time{})
	var b [1]byte
	_, _ = tc.Read(b[:]) // returns when the peer closes, or sends what it must not
}

// dropConns closes every accepted connection and leaves the listener up:
// what a peer sees when something on the path resets its connection.
func (s *livenessServer) dropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// close stops accepting and closes every connection: what the peers see
// of this process ending.
func (s *livenessServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// livenessWatch is one established liveness connection to a peer.
type livenessWatch struct {
	conn        net.Conn
	incarnation [incarnationLen]byte
}

// dialLiveness opens the link to the controller at addr, checked to be
// controller id by conf.
func dialLiveness(ctx context.Context, addr string, conf *tls.Config) (*livenessWatch, error) {
	ctx, cancel := context.WithTimeout(ctx, livenessDialTimeout)
	defer cancel()
	d := tls.Dialer{Config: conf}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	w := &livenessWatch{conn: c}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetReadDeadline(dl)
	}
	if _, err := io.ReadFull(c, w.incarnation[:]); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Time{})
	return w, nil
}

// refused reports whether a dial found nothing listening.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// watchLiveness holds the liveness link to peer p and reports its death
// to the handler, until p is removed or the transport closes.
func (p *peer) watchLiveness() {
	conf := p.q.cfg.TLS.clientConfig(p.q.onReject, p.id, ALPNLiveness)
	backoff := minBackoff
	var cur *livenessWatch
	for p.ctx.Err() == nil {
		if cur == nil {
			w, err := dialLiveness(p.ctx, p.currentAddr(), conf)
			if err != nil {
				sleepCtx(p.ctx, backoff)
				backoff = nextBackoff(backoff)
				continue
			}
			cur, backoff = w, minBackoff
		}
		p.liveUp.Store(true)
		stop := context.AfterFunc(p.ctx, func() { cur.conn.Close() })
		var b [1]byte
		_, _ = cur.conn.Read(b[:]) // the server never writes again: any return is a close
		stop()
		cur.conn.Close()
		p.liveUp.Store(false)
		if p.ctx.Err() != nil {
			return
		}
		next, err := p.confirmDial(conf)
		switch {
		case err != nil && refused(err):
			p.q.met.peerDeaths.Inc()
			p.q.log.Info("peer process ended: its liveness connection closed and nothing listens any more", "peer", p.id)
			p.q.reportGone(p.id)
			cur = nil
		case err != nil:
			cur = nil // proves nothing; watch again once the peer answers
		case !bytes.Equal(next.incarnation[:], cur.incarnation[:]):
			p.q.met.peerDeaths.Inc()
			p.q.log.Info("peer process ended: it answers as a new incarnation", "peer", p.id)
			p.q.reportGone(p.id)
			cur = next
		default:
			cur = next // the same process: the connection alone was lost
		}
	}
}

// confirmAttempts bounds the redials that judge a closed liveness
// connection, confirmGap the wait between them.
const (
	confirmAttempts = 5
	confirmGap      = 20 * time.Millisecond
)

// confirmDial is the redial after a closed connection. A process that is
// ending closes its connections a moment before its listener, so a redial
// made in that moment is accepted by the kernel and then reset: the dial
// is tried again on a reset, a closed connection or a failed read, until
// it is refused, answers, or times out.
func (p *peer) confirmDial(conf *tls.Config) (*livenessWatch, error) {
	var err error
	for i := range confirmAttempts {
		var w *livenessWatch
		w, err = dialLiveness(p.ctx, p.currentAddr(), conf)
		if err == nil || refused(err) || isTimeout(err) || p.ctx.Err() != nil {
			return w, err
		}
		sleepCtx(p.ctx, time.Duration(i+1)*confirmGap)
	}
	return nil, err
}

// isTimeout reports whether err is a dial or read that ran out of time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// currentAddr is the peer's address now (AddPeer may change it).
func (p *peer) currentAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// reportGone tells the handler, when it wants to know, that id's process
// ended.
func (q *QUIC) reportGone(id uint64) {
	q.mu.RLock()
	h := q.handler
	q.mu.RUnlock()
	if g, ok := h.(PeerGoneHandler); ok {
		g.PeerGone(id)
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
