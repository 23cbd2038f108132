package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// streamAcceptTimeout bounds how long a dialled connection may sit without
// opening its stream before the listener drops it.
const streamAcceptTimeout = 10 * time.Second

// quicStream is one bidirectional QUIC stream that owns its connection:
// closing the stream closes the connection.
type quicStream struct {
	conn *quic.Conn
	s    *quic.Stream
	peer Identity // verified in the handshake
	once sync.Once
}

func (q *quicStream) Read(p []byte) (int, error)         { return q.s.Read(p) }
func (q *quicStream) Write(p []byte) (int, error)        { return q.s.Write(p) }
func (q *quicStream) SetReadDeadline(t time.Time) error  { return q.s.SetReadDeadline(t) }
func (q *quicStream) SetWriteDeadline(t time.Time) error { return q.s.SetWriteDeadline(t) }
func (q *quicStream) RemoteAddr() string                 { return q.conn.RemoteAddr().String() }
func (q *quicStream) Peer() (Identity, bool)             { return q.peer, true }

func (q *quicStream) Close() error {
	q.once.Do(func() {
		q.s.CancelRead(0)
		_ = q.s.Close()
		_ = q.conn.CloseWithError(errCodeShutdown, "stream closed")
	})
	return nil
}

// quicStreamListener hands out the first bidirectional stream of every
// connection that negotiated its ALPN on the controllers' QUIC listener.
type quicStreamListener struct {
	q      *QUIC
	alpn   string
	ch     chan Stream
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	streams map[*quicStream]struct{}
}

// ListenStreams serves proto (e.g. ALPNWorker) on this transport's UDP
// socket, beside raft: each connection that negotiates proto contributes
// one stream to Accept. Call it once per protocol, before peers dial.
func (q *QUIC) ListenStreams(proto string) (StreamListener, error) {
	if proto == ALPNRaft || proto == ALPNJoin || proto == "" {
		return nil, fmt.Errorf("listen streams: protocol %q is reserved or empty", proto)
	}
	l := &quicStreamListener{q: q, alpn: proto, ch: make(chan Stream), closed: make(chan struct{}),
		streams: map[*quicStream]struct{}{}}
	q.HandleALPN(proto, l.serveConn)
	return l, nil
}

// serveConn runs on the transport's goroutine for one connection and must
// return once the connection is closed.
func (l *quicStreamListener) serveConn(conn *quic.Conn) {
	// The handshake checked the chain, the cluster and the role.
	peer, err := PeerIdentity(conn.ConnectionState().TLS)
	if err != nil {
		_ = conn.CloseWithError(errCodeBadHeader, "no identity")
		return
	}
	ctx, cancel := context.WithTimeout(conn.Context(), streamAcceptTimeout)
	s, err := conn.AcceptStream(ctx)
	cancel()
	if err != nil {
		_ = conn.CloseWithError(errCodeBadHeader, "no stream opened")
		return
	}
	qs := &quicStream{conn: conn, s: s, peer: peer}
	l.mu.Lock()
	l.streams[qs] = struct{}{}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.streams, qs)
		l.mu.Unlock()
	}()
	select {
	case l.ch <- qs:
	case <-l.closed:
		qs.Close()
		return
	case <-conn.Context().Done():
		return
	}
	<-conn.Context().Done()
}

func (l *quicStreamListener) Accept(ctx context.Context) (Stream, error) {
	select {
	case s := <-l.ch:
		return s, nil
	case <-l.closed:
		return nil, ErrListenerClosed
	case <-l.q.ctx.Done():
		return nil, ErrListenerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *quicStreamListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.mu.Lock()
		streams := make([]*quicStream, 0, len(l.streams))
		for s := range l.streams {
			streams = append(streams, s)
		}
		l.mu.Unlock()
		for _, s := range streams {
			s.Close()
		}
	})
	return nil
}

func (l *quicStreamListener) Addr() string { return l.q.Addr().String() }

// QUICDialerConfig configures NewQUICDialer.
type QUICDialerConfig struct {
	TLS  *TLSBundle
	ALPN string // e.g. ALPNWorker
	// LocalAddr is the UDP address to dial from; "" picks any port on all
	// interfaces.
	LocalAddr string
	Logger    *slog.Logger
	// RequestInterval, when set, is how often the protocol sends a request
	// on every connection (the worker's heartbeat interval). The dialer
	// then delays acknowledging a reply until that next request, which
	// carries the acknowledgement, and gives the controller up to half an
	// interval to acknowledge before probing it; see ackDelays.
	RequestInterval time.Duration
	// IdleTimeout, when set, closes a connection silent that long and
	// turns QUIC's keep-alive pings off: the protocol itself must send on
	// every connection well within it (a worker's heartbeats and standby
	// pings). At most MaxIdleTimeout, which the controller grants. 0 keeps
	// the defaults of the links between controllers: 6 s, and a ping
	// every 2 s.
	IdleTimeout time.Duration

	// wrapConn lets tests see the dialer's datagrams.
	wrapConn func(*net.UDPConn) net.PacketConn
}

// QUICDialer dials streams over QUIC with mutual TLS 1.3. All its
// connections share one UDP socket; every DialStream is its own connection.
type QUICDialer struct {
	cfg   QUICDialerConfig
	tls   *tls.Config
	qconf *quic.Config

	mu  sync.Mutex
	udp *net.UDPConn
	tr  *quic.Transport
}

// NewQUICDialer binds the dialer's UDP socket.
func NewQUICDialer(cfg QUICDialerConfig) (*QUICDialer, error) {
	if cfg.TLS == nil {
		return nil, errors.New("new QUIC dialer: TLS bundle is required")
	}
	if cfg.ALPN == "" {
		return nil, errors.New("new QUIC dialer: ALPN is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &QUICDialer{
		cfg: cfg,
		// Presents the bundle's current certificate and checks the
		// controller against its current CA (and Denied) at every dial,
		// so a Reload needs no new dialer.
		tls: cfg.TLS.ClientConfig(cfg.ALPN),
		qconf: &quic.Config{
			HandshakeIdleTimeout: handshakeTimeout,
			MaxIdleTimeout:       idleTimeout,
			KeepAlivePeriod:      keepAlive,
		},
	}
	d.qconf.MaxAckDelay, d.qconf.MinPeerAckDelay = ackDelays(cfg.RequestInterval)
	if cfg.IdleTimeout > 0 {
		d.qconf.MaxIdleTimeout, d.qconf.KeepAlivePeriod = min(cfg.IdleTimeout, MaxIdleTimeout), 0
	}
	if err := d.rebind(); err != nil {
		return nil, err
	}
	return d, nil
}

// rebind opens a fresh UDP socket (the previous transport failed).
func (d *QUICDialer) rebind() error {
	local := d.cfg.LocalAddr
	if local == "" {
		local = ":0"
	}
	ua, err := net.ResolveUDPAddr("udp", local)
	if err != nil {
		return fmt.Errorf("resolve dialer address %q: %w", local, err)
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return fmt.Errorf("bind dialer socket %s: %w", local, err)
	}
	d.mu.Lock()
	old := d.tr
	oldUDP := d.udp
	var pc net.PacketConn = udp
	if d.cfg.wrapConn != nil {
		pc = d.cfg.wrapConn(udp)
	}
	d.udp, d.tr = udp, &quic.Transport{Conn: pc}
	d.mu.Unlock()
	if old != nil {
		_ = old.Close()
		_ = oldUDP.Close()
	}
	return nil
}

// UDPSocket returns the kernel's counts for the dialer's current socket
// (Linux): datagrams dropped because this process read it too slowly,
// and bytes waiting in it.
func (d *QUICDialer) UDPSocket() (UDPSocket, error) {
	d.mu.Lock()
	u := d.udp
	d.mu.Unlock()
	if u == nil {
		return UDPSocket{}, errors.New("UDP socket: dialer closed")
	}
	return ReadUDPSocket(u)
}

// DialStream connects to addr and opens the session's stream.
func (d *QUICDialer) DialStream(ctx context.Context, addr string) (Stream, error) {
	ua, err := resolveUDP(ctx, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	tr := d.tr
	d.mu.Unlock()
	if tr == nil {
		return nil, errors.New("dial: dialer closed")
	}
	conn, err := tr.Dial(ctx, ua, d.tls, d.qconf)
	if err != nil {
		if errors.Is(err, quic.ErrTransportClosed) {
			// The socket died (e.g. its interface went away): take a new
			// one for the next attempt, unless we were closed.
			d.mu.Lock()
			stale := d.tr == tr
			d.mu.Unlock()
			if stale {
				if rerr := d.rebind(); rerr != nil {
					d.cfg.Logger.Warn("rebind dialer socket", "err", rerr)
				}
			}
		}
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		_ = conn.CloseWithError(errCodeShutdown, "")
		return nil, fmt.Errorf("open stream to %s: %w", addr, err)
	}
	peer, err := PeerIdentity(conn.ConnectionState().TLS)
	if err != nil {
		_ = conn.CloseWithError(errCodeShutdown, "")
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &quicStream{conn: conn, s: s, peer: peer}, nil
}

// LocalAddr returns the dialer's UDP address.
func (d *QUICDialer) LocalAddr() net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.udp.LocalAddr()
}

// Close closes every connection and the socket.
func (d *QUICDialer) Close() error {
	d.mu.Lock()
	tr, udp := d.tr, d.udp
	d.tr = nil
	d.mu.Unlock()
	if tr == nil {
		return nil
	}
	err := tr.Close()
	return errors.Join(err, udp.Close())
}

// maxAckDelayCap keeps max_ack_delay well below the 2^14 ms QUIC allows.
const maxAckDelayCap = 10 * time.Second

// ackDelays chooses the QUIC acknowledgement timing for a connection that
// sends a request every interval and gets one reply to each (0 keeps
// QUIC's defaults: acknowledge within 25 ms, probe after RTT + 25 ms).
//
// With the defaults every heartbeat costs three packets: the request, the
// reply (which carries the acknowledgement of the request) and, 25 ms
// later, a packet that only acknowledges the reply. Letting the dialer
// wait 1.5 intervals to acknowledge lets the next request carry it: two
// packets, and about a third less CPU on both ends (docs/PERFORMANCE.md).
// The cost is on loss: a lost reply is repaired only when the next reply
// arrives (its gap makes the dialer acknowledge at once) or when the
// controller probes, about 1.7 intervals later (the patched quic-go
// advertises an eighth more than the dialer waits, so a dialer timer that
// fires a little late draws no probe), so that heartbeat is acknowledged
// about an interval late — inside the self-fence time, but late enough for
// the worker to ask the other controllers who leads.
//
// The dialer also assumes the controller may take half an interval to
// acknowledge: a controller that stalls (a garbage-collection pause with
// thousands of connections) would otherwise be sent two probe packets per
// connection every few tens of milliseconds while it catches up, and its
// backlog would grow instead of shrink. A lost request is still resent
// within half an interval, before the next one is due.
func ackDelays(interval time.Duration) (maxAck, minPeerAck time.Duration) {
	if interval <= 0 {
		return 0, 0
	}
	return min(interval*3/2, maxAckDelayCap), min(interval/2, maxAckDelayCap)
}
