package transport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Tunables. Timeouts are short because raft heartbeats every ~100ms: a peer
// silent for seconds is down, and raft (not the transport) retries.
const (
	queueSize        = 4096 // per-peer message queue (etcd uses 4096 too)
	snapQueueSize    = 4    // raft sends one snapshot per follower at a time
	minBackoff       = 100 * time.Millisecond
	maxBackoff       = time.Second     // see below
	stableConn       = 2 * time.Second // a connection that lived this long resets the backoff
	dialTimeout      = 5 * time.Second
	handshakeTimeout = 3 * time.Second
	idleTimeout      = 6 * time.Second
	keepAlive        = 2 * time.Second
	writeTimeout     = 5 * time.Second
	headerTimeout    = 5 * time.Second
	checkInterval    = 250 * time.Millisecond
	maxBatchBytes    = 256 << 10
)

// maxBackoff caps the wait between dials of a peer. A controller cut off
// the network fails every dial at once ("network is unreachable"), so
// the wait doubles to its cap within a second or two of a partition; the
// cap is then how late it can reach its peers after the network heals.
// At 5 s, a leader that failed within seconds of another controller's
// partition healing left the two survivors unable to elect for up to 4.4 s
// (each one's pre-votes waited for the healed one's next dial), and the
// workers, whose self-fence comes 6 s after their last acknowledgement,
// fenced themselves (docs/PERFORMANCE.md, "A healed controller reachable
// again within a second"). A controller has a handful of peers, so a
// dial a second costs nothing; etcd's peers redial every 100 ms.

// unansweredAfter is how long a peer connection may go without receiving
// a single packet after a write before it is closed and dialed again.
// QUIC acknowledges every write within its ack delay (25 ms), so silence
// this long means the packets go nowhere: a path that drops them, or a
// peer that lost the connection (a controller whose interface went down
// closes all its connections) and whose stateless reset can only come
// after this side's next retransmission, which QUIC's backoff puts
// seconds away after a partition of seconds. Without this the connection
// would wait for the idle timeout (6 s) or that retransmission.
const unansweredAfter = 2 * time.Second

// ackEvery is how many packets a controller receives before it
// acknowledges them at once (QUIC's default is 2; a gap, and 25 ms, still
// make it acknowledge as before). Raft messages between two controllers
// flow one way on each connection (each side dials its own), so nothing
// carries the receiver's acknowledgements back: with the default, every
// second raft message drew a packet that only acknowledged it, about 3 of
// the 11 datagrams a one-client write cost the cluster. On a machine whose
// cores are the bottleneck, each of those is CPU at both ends
// (docs/PERFORMANCE.md, "Where one client's write time goes"). The
// listener's setting covers workers' connections too, where it changes
// nothing: a worker's request is answered at once, and the reply carries
// the acknowledgement.
const ackEvery = 10

// MaxIdleTimeout is the longest idle timeout a controller grants a
// dialer: a connection silent that long is closed. Controllers dial each
// other with 6 s and a keep-alive ping every 2 s, so a dead peer is
// noticed within seconds. A dialer whose protocol talks on every
// connection anyway (a worker heartbeats on its session and pings its
// standbys, roles/worker/standby.go) asks for more with
// QUICDialerConfig.IdleTimeout and sends no keep-alive pings: at
// thousands of workers, the pings of idle standby connections cost the
// controllers more CPU than the heartbeats (docs/PERFORMANCE.md, "Idle
// connections without keep-alive pings").
const MaxIdleTimeout = 30 * time.Second

// QUIC application and stream error codes (visible to the peer).
const (
	errCodeShutdown        quic.ApplicationErrorCode = 0x0
	errCodeClusterMismatch quic.ApplicationErrorCode = 0x101
	errCodeBadHeader       quic.ApplicationErrorCode = 0x102
	errCodeUnsupportedALPN quic.ApplicationErrorCode = 0x103
	errCodeReconnect       quic.ApplicationErrorCode = 0x104
	errCodeRevoked         quic.ApplicationErrorCode = 0x105 // the peer's certificate is now denied (CloseDenied)
	errCodeBadFrame        quic.StreamErrorCode      = 0x201
)

// QUICConfig configures NewQUIC.
type QUICConfig struct {
	NodeID     uint64
	ListenAddr string     // "127.0.0.1:7001"; port 0 picks a free port (see Addr)
	TLS        *TLSBundle // from LoadTLSDir
	// ClusterID is sent in every stream header; inbound streams from peers
	// with a different non-empty id are refused. May be nil.
	ClusterID  func() string
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil => metrics not registered
}

// QUIC is the production Transport: mutual TLS 1.3 over QUIC on one UDP
// socket used both to listen and to dial (so peers see our listen address).
// Each peer has a sender goroutine owning one outbound connection with one
// long-lived unidirectional stream for raft messages; MsgSnap goes on its own
// bidirectional stream and is acknowledged by the receiver.
type QUIC struct {
	cfg      QUICConfig
	log      *slog.Logger
	met      *metrics
	rep      *reporter
	udp      *net.UDPConn
	tr       *quic.Transport
	ln       *quic.Listener
	qconf    *quic.Config // dialing peers
	lconf    *quic.Config // the listener
	onReject func(error)
	rejects  *rejectLog
	live     *livenessServer // nil when the TCP port could not be had (liveness.go)
	// tcpRetryAfter is how long a peer's messages stay on QUIC after its
	// TCP stream failed (raft_tcp.go); tests shorten it.
	tcpRetryAfter time.Duration

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	started bool
	closed  bool
	handler Handler
	peers   map[uint64]*peer
	alpn    map[string]func(*quic.Conn)
	conns   map[*quic.Conn]struct{} // accepted connections, closed by Close
	dups    duplicates              // raft peers seen from two addresses (duplicate.go)
	dialed  map[*quic.Conn]struct{} // open connections this node dialed (raft peers, peer API), for CloseDenied
}

var _ Transport = (*QUIC)(nil)

// NewQUIC binds the UDP socket and prepares the listener; inbound traffic is
// delivered once Start is called. Peers may be added before Start.
func NewQUIC(cfg QUICConfig) (*QUIC, error) {
	if cfg.NodeID == 0 {
		return nil, errors.New("new QUIC transport: node id must be non-zero")
	}
	if cfg.TLS == nil {
		return nil, errors.New("new QUIC transport: TLS bundle is required")
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	q := &QUIC{
		tcpRetryAfter: tcpRetryAfter,
		cfg:           cfg,
		log:           log.With("component", "transport", "node", cfg.NodeID),
		met:           met,
		rep:           newReporter(),
		peers:         map[uint64]*peer{},
		alpn:          map[string]func(*quic.Conn){},
		conns:         map[*quic.Conn]struct{}{},
		dialed:        map[*quic.Conn]struct{}{},
		qconf: &quic.Config{
			HandshakeIdleTimeout:  handshakeTimeout,
			MaxIdleTimeout:        idleTimeout,
			KeepAlivePeriod:       keepAlive,
			AckElicitingThreshold: ackEvery,
		},
		// The dialer sets the pace: QUIC takes the shorter of the two
		// idle timeouts, and the side that wants keep-alive pings sends
		// them (the other's acknowledgements keep its timer going too).
		lconf: &quic.Config{
			HandshakeIdleTimeout:  handshakeTimeout,
			MaxIdleTimeout:        MaxIdleTimeout,
			AckElicitingThreshold: ackEvery,
		},
	}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.rejects = newRejectLog(q.log)
	q.onReject = func(err error) {
		reason := rejectReason(err)
		q.met.rejected.WithLabelValues(reason).Inc()
		q.rejects.warn(reason, err)
	}
	serverTLS := cfg.TLS.serverConfigCounting(q.onReject, ALPNRaft)
	// Extra ALPNs may be registered after the listener exists, so the
	// offered protocol list is computed per handshake.
	perConn := serverTLS.Clone()
	serverTLS.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		// The join protocol alone asks for no client certificate
		// (join.go); every other hello gets mutual TLS.
		if c := q.joinConfig(hello); c != nil {
			return c, nil
		}
		c := perConn.Clone()
		c.NextProtos = q.protocols()
		return c, nil
	}

	addr, err := net.ResolveUDPAddr("udp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("resolve listen address %q: %w", cfg.ListenAddr, err)
	}
	q.udp, err = net.ListenUDP("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	q.met.udp.setSource(q.UDPSocket)
	// The reset key is derived once, from the key in use at start, and kept
	// when the TLS files are reloaded: connections established before a
	// Reload must still be resettable by this process, and a changing key
	// would make its own resets unrecognisable to peers.
	cert, _ := cfg.TLS.Current()
	q.tr = &quic.Transport{Conn: q.udp, StatelessResetKey: resetKey(*cert)}
	q.ln, err = q.tr.Listen(serverTLS, q.lconf)
	if err != nil {
		q.udp.Close()
		return nil, fmt.Errorf("start QUIC listener on %s: %w", cfg.ListenAddr, err)
	}
	// The liveness link (liveness.go) on TCP at the same address: without
	// it this controller's peers still notice its death, by their election
	// timeout, so a port in use is a warning, not a failure.
	q.live, err = newLivenessServer(q.udp.LocalAddr().String(), cfg.TLS.serverConfigCounting(q.onReject, ALPNLiveness, ALPNRaftTCP))
	if err != nil {
		q.log.Warn("liveness listener not started: peers will notice this controller's death by their election timeout only; free TCP on the cluster port to fix",
			"addr", q.udp.LocalAddr().String(), "err", err)
	} else {
		q.live.onRaft = q.serveRaftTCP
	}
	return q, nil
}

// resetKey derives the QUIC stateless-reset key from the node's private key,
// so a node restarted with the same key can reset its peers' stale
// connections at once instead of leaving them to time out. It is computed
// at NewQUIC only (see there): after a rotation, the first restart with the
// new key leaves peers' old connections to time out instead.
func resetKey(cert tls.Certificate) *quic.StatelessResetKey {
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil
	}
	mac := hmac.New(sha256.New, der)
	mac.Write([]byte("corral quic stateless reset key v1"))
	var k quic.StatelessResetKey
	copy(k[:], mac.Sum(nil))
	return &k
}

// Addr returns the bound UDP address (useful with port 0).
func (q *QUIC) Addr() net.Addr { return q.udp.LocalAddr() }

// UDPSocket returns the kernel's counts for the cluster socket (Linux):
// datagrams dropped because this process read it too slowly, and bytes
// waiting in it.
func (q *QUIC) UDPSocket() (UDPSocket, error) { return ReadUDPSocket(q.udp) }

// HandleALPN routes inbound connections that negotiate proto to fn, which
// runs in its own goroutine and must return once the connection is closed
// (Close closes it). Register before peers dial with that protocol; proto
// must differ from ALPNRaft.
func (q *QUIC) HandleALPN(proto string, fn func(*quic.Conn)) {
	if proto == ALPNRaft || proto == ALPNJoin || proto == "" || fn == nil {
		q.log.Error("HandleALPN: invalid registration ignored (ALPNJoin: use HandleJoin)", "alpn", proto)
		return
	}
	q.mu.Lock()
	q.alpn[proto] = fn
	q.mu.Unlock()
}

func (q *QUIC) protocols() []string {
	q.mu.RLock()
	defer q.mu.RUnlock()
	protos := []string{ALPNRaft}
	for p := range q.alpn {
		if p != ALPNJoin { // offered only without client authentication (joinConfig)
			protos = append(protos, p)
		}
	}
	slices.Sort(protos[1:])
	return protos
}

// Start begins accepting connections and delivering messages to h.
func (q *QUIC) Start(h Handler) error {
	if h == nil {
		return errors.New("start transport: nil handler")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return errors.New("start transport: already closed")
	case q.started:
		return errors.New("start transport: already started")
	}
	q.started, q.handler = true, h
	q.wg.Go(func() { q.rep.run(h, q.ctx.Done()) })
	q.wg.Go(q.acceptLoop)
	if q.live != nil {
		q.wg.Go(func() { q.live.serve(&q.wg) })
	}
	return nil
}

// Send marshals and enqueues msgs; it never blocks (see Transport). Marshalling
// happens here, on the caller's goroutine, because raft messages may share
// entries with the raft log and must not be read concurrently with it.
func (q *QUIC) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		isSnap := m.GetType() == raftpb.MsgSnap
		q.mu.RLock()
		p, closed := q.peers[m.GetTo()], q.closed
		q.mu.RUnlock()
		if closed {
			return
		}
		if p == nil {
			q.met.dropped.Inc()
			if isSnap {
				q.rep.reportSnapshot(m.GetTo(), raft.SnapshotFailure)
			}
			continue
		}
		out, err := encodeOut(m)
		if err != nil {
			q.log.Error("dropping unsendable raft message", "to", m.GetTo(), "type", m.GetType().String(), "err", err)
			p.drop(outMsg{typ: m.GetType(), snap: isSnap})
			continue
		}
		p.enqueue(out)
	}
}

// outMsg is a message ready for the wire: length prefix + proto bytes.
type outMsg struct {
	typ  raftpb.MessageType
	snap bool
	data []byte
}

func encodeOut(m *raftpb.Message) (outMsg, error) {
	isSnap := m.GetType() == raftpb.MsgSnap
	size := proto.Size(m)
	var buf []byte
	if !isSnap {
		buf = getOutBuf(4 + size)
	} else {
		buf = make([]byte, 0, 4+size)
	}
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(append(buf, 0, 0, 0, 0), m)
	if err != nil {
		return outMsg{}, fmt.Errorf("marshal %s: %w", m.GetType(), err)
	}
	limit := maxMessageFrame
	if isSnap {
		limit = maxSnapshotFrame
	}
	n := len(b) - 4
	if n > limit {
		return outMsg{}, fmt.Errorf("%s is %d bytes: %w (limit %d)", m.GetType(), n, errFrameTooLarge, limit)
	}
	binary.BigEndian.PutUint32(b[:4], uint32(n))
	return outMsg{typ: m.GetType(), snap: isSnap, data: b}, nil
}

// outBufs recycles the buffers raft messages are marshalled into: one per
// message was a tenth of a busy leader's allocation, and the peer's loop
// copies each into its write batch as soon as it takes it from the queue
// (putOutBuf). A message dropped instead simply leaves its buffer to the
// collector.
var outBufs sync.Pool // of *[]byte

// maxPooledOut is the largest buffer kept for reuse; larger messages
// (a follower catching up) are rare and would pin their memory.
const maxPooledOut = 64 << 10

// getOutBuf returns an empty buffer with room for n bytes.
func getOutBuf(n int) []byte {
	if p, ok := outBufs.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, max(n, 1024))
}

// putOutBuf gives b back once nothing refers to it.
func putOutBuf(b []byte) {
	if cap(b) <= maxPooledOut {
		outBufs.Put(&b)
	}
}

// AddPeer registers a peer (ids equal to our own are ignored) or updates its
// address, which makes the sender reconnect to the new address.
func (q *QUIC) AddPeer(id uint64, addr string) {
	if id == q.cfg.NodeID || id == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if p, ok := q.peers[id]; ok {
		p.setAddr(addr)
		return
	}
	p := newPeer(q, id, addr)
	q.peers[id] = p
	q.wg.Go(p.run)
	q.wg.Go(p.watchLiveness)
}

// RemovePeer stops sending to id and closes its outbound connection.
func (q *QUIC) RemovePeer(id uint64) {
	q.mu.Lock()
	p := q.peers[id]
	delete(q.peers, id)
	q.mu.Unlock()
	if p != nil {
		p.cancel()
		q.met.rtt.DeleteLabelValues(p.idLabel)
	}
}

// PeerStatus reports the outbound connection state of id.
func (q *QUIC) PeerStatus(id uint64) PeerStatus {
	q.mu.RLock()
	p := q.peers[id]
	q.mu.RUnlock()
	if p == nil {
		return PeerStatus{}
	}
	return p.status()
}

// Close stops all goroutines, tells peers we are going away and releases the
// UDP socket. It is safe to call more than once.
func (q *QUIC) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	conns := make([]*quic.Conn, 0, len(q.conns))
	for c := range q.conns {
		conns = append(conns, c)
	}
	q.mu.Unlock()

	q.cancel() // stops peers, dials, the accept loop and in-flight Process calls
	for _, c := range conns {
		_ = c.CloseWithError(errCodeShutdown, "node shutting down")
	}
	lnErr := q.ln.Close()
	if q.live != nil {
		q.live.close()
	}
	q.wg.Wait()
	trErr := q.tr.Close()
	udpErr := q.udp.Close()
	if err := errors.Join(lnErr, trErr, udpErr); err != nil {
		return fmt.Errorf("close QUIC transport: %w", err)
	}
	return nil
}

// dialTracked dials addr with conf and records the connection (until it
// closes) for CloseDenied.
func (q *QUIC) dialTracked(ctx context.Context, addr *net.UDPAddr, conf *tls.Config) (*quic.Conn, error) {
	conn, err := q.tr.Dial(ctx, addr, conf, q.qconf)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.dialed[conn] = struct{}{}
	q.mu.Unlock()
	context.AfterFunc(conn.Context(), func() {
		q.mu.Lock()
		delete(q.dialed, conn)
		q.mu.Unlock()
	})
	return conn, nil
}

// CloseDenied asks the TLS bundle's Denied hook again about the peer of
// every open connection, accepted (raft, peer API, worker streams) or
// dialed (raft peers, peer API), and closes those it now refuses with
// application error 0x105, counting each as a rejection for reason
// "revoked". Handshakes consult Denied already; call this after what
// Denied refuses has grown, so that sessions of a revoked certificate end
// too. Without a Denied hook it does nothing.
func (q *QUIC) CloseDenied() {
	if q.cfg.TLS.Denied == nil {
		return
	}
	q.mu.RLock()
	conns := make([]*quic.Conn, 0, len(q.conns)+len(q.dialed))
	for c := range q.conns {
		conns = append(conns, c)
	}
	for c := range q.dialed {
		conns = append(conns, c)
	}
	q.mu.RUnlock()
	for _, c := range conns {
		err := q.cfg.TLS.deniedConn(c.ConnectionState().TLS)
		if err == nil || c.Context().Err() != nil {
			continue
		}
		q.onReject(fmt.Errorf("closing connection with %s: %w", c.RemoteAddr(), err))
		_ = c.CloseWithError(errCodeRevoked, "certificate revoked")
	}
}

func (q *QUIC) clusterID() string {
	if q.cfg.ClusterID == nil {
		return ""
	}
	return q.cfg.ClusterID()
}

// touchPeer records inbound contact from id.
func (q *QUIC) touchPeer(id uint64) {
	q.mu.RLock()
	p := q.peers[id]
	q.mu.RUnlock()
	if p != nil {
		p.touch()
	}
}
