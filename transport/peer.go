package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// peer is the sending side towards one node. Its run goroutine owns the
// outbound connection: dial (with backoff) → open the message stream →
// write queued frames until an error → report unreachable → back off.
type peer struct {
	q       *QUIC
	id      uint64
	idLabel string
	msgc    chan outMsg
	snapc   chan outMsg
	tls     *tls.Config     // checks the server is this peer
	ctx     context.Context // cancelled by RemovePeer / Close
	cancel  context.CancelFunc
	snapWG  sync.WaitGroup
	liveUp  atomic.Bool // the liveness link to it is up (liveness.go)

	mu            sync.Mutex
	addr          string
	cancelAttempt context.CancelFunc // cancels the current attempt (address change)
	connected     bool
	lastContact   time.Time
	rtt           time.Duration
	tcp           bool      // messages go over TCP (raft_tcp.go), not QUIC
	tcpRetry      time.Time // TCP failed: messages stay on QUIC until then
}

func newPeer(q *QUIC, id uint64, addr string) *peer {
	p := &peer{
		q:       q,
		id:      id,
		idLabel: strconv.FormatUint(id, 10),
		msgc:    make(chan outMsg, queueSize),
		snapc:   make(chan outMsg, snapQueueSize),
		addr:    addr,
		// The server must be controller id of this cluster: an address now
		// used by another node, or a worker, is not this peer.
		tls: q.cfg.TLS.clientConfig(q.onReject, id, ALPNRaft),
	}
	p.ctx, p.cancel = context.WithCancel(q.ctx)
	return p
}

// enqueue never blocks: a full queue drops the message.
func (p *peer) enqueue(m outMsg) {
	c := p.msgc
	if m.snap {
		c = p.snapc
	}
	select {
	case c <- m:
	default:
		p.drop(m)
	}
}

// drop discards m and tells raft, as etcd's peer.send does.
func (p *peer) drop(m outMsg) {
	p.q.met.dropped.Inc()
	if m.snap {
		p.q.met.snapsFailed.Inc()
		p.q.rep.reportSnapshot(p.id, raft.SnapshotFailure)
	}
	p.q.rep.reportUnreachable(p.id)
}

// dropQueued discards everything currently queued (the peer is down).
func (p *peer) dropQueued() {
	for {
		select {
		case m := <-p.msgc:
			p.drop(m)
		case m := <-p.snapc:
			p.drop(m)
		default:
			return
		}
	}
}

func (p *peer) setAddr(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if addr == p.addr {
		return
	}
	p.addr = addr
	if p.cancelAttempt != nil {
		p.cancelAttempt()
	}
}

func (p *peer) newAttempt() (context.Context, context.CancelFunc, string) {
	ctx, cancel := context.WithCancel(p.ctx)
	p.mu.Lock()
	p.cancelAttempt = cancel
	addr := p.addr
	p.mu.Unlock()
	return ctx, cancel, addr
}

func (p *peer) touch() {
	p.mu.Lock()
	p.lastContact = time.Now()
	p.mu.Unlock()
}

// setConnected records a new connection (a completed handshake is contact)
// or, with nil, its loss.
func (p *peer) setConnected(c *quic.Conn) {
	p.mu.Lock()
	p.connected = c != nil
	if c != nil {
		p.lastContact = time.Now()
	}
	p.mu.Unlock()
	if c != nil {
		p.updateRTT(c)
	}
}

// updateRTT samples the connection's smoothed RTT into status and metrics.
func (p *peer) updateRTT(c *quic.Conn) {
	rtt := c.ConnectionStats().SmoothedRTT
	if rtt <= 0 {
		return
	}
	p.mu.Lock()
	p.rtt = rtt
	p.mu.Unlock()
	if p.ctx.Err() == nil { // a removed peer must not resurrect its series
		p.q.met.rtt.WithLabelValues(p.idLabel).Set(rtt.Seconds())
	}
}

func (p *peer) status() PeerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PeerStatus{Connected: p.connected, LastContact: p.lastContact, RTT: p.rtt, MessagesOverTCP: p.connected && p.tcp}
}

// setLink records which way the messages go now.
func (p *peer) setLink(tcp bool) {
	p.mu.Lock()
	p.tcp = tcp
	p.mu.Unlock()
}

func (p *peer) run() {
	backoff := minBackoff
	failures := 0 // consecutive failed attempts: the first is logged at Warn, repeats at Debug
	for p.ctx.Err() == nil {
		actx, cancel, addr := p.newAttempt()
		start := time.Now()
		established, err := p.connectAndServe(actx, addr)
		if p.ctx.Err() != nil {
			cancel()
			return
		}
		if established {
			failures = 0
			if time.Since(start) >= stableConn {
				backoff = minBackoff
			}
			p.q.log.Info("connection to peer lost", "peer", p.id, "addr", addr, "err", err)
		} else {
			failures++
			lvl := p.q.log.Debug
			if failures == 1 {
				lvl = p.q.log.Warn
			}
			lvl("cannot reach peer", "peer", p.id, "addr", addr, "attempt", failures, "err", err)
		}
		p.q.rep.reportUnreachable(p.id)
		p.dropQueued()
		if actx.Err() == nil { // not an address change: back off
			p.waitDropping(actx, jitter(backoff))
			backoff = nextBackoff(backoff)
		}
		cancel()
	}
}

// nextBackoff doubles the wait between dials, up to maxBackoff.
func nextBackoff(d time.Duration) time.Duration { return min(2*d, maxBackoff) }

// jitter spreads reconnects over [d/2, d) so a restarted node is not hit by
// all peers at the same instant.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// waitDropping waits d; meanwhile arriving messages are dropped (and
// reported) at once, because holding them would only deliver stale traffic.
func (p *peer) waitDropping(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case m := <-p.msgc:
			p.drop(m)
		case m := <-p.snapc:
			p.drop(m)
		}
	}
}

// connectAndServe dials addr and serves the connection until it fails.
// established reports whether messages could flow at all; a peer that
// accepts the connection but refuses our cluster id counts as not established.
func (p *peer) connectAndServe(ctx context.Context, addr string) (established bool, err error) {
	conn, err := p.dial(ctx, addr)
	if err != nil {
		return false, err
	}
	err = p.serve(ctx, conn)
	p.setConnected(nil)
	_ = conn.CloseWithError(errCodeReconnect, "closing")
	p.snapWG.Wait()
	var appErr *quic.ApplicationError
	if errors.Is(err, errTCPClusterMismatch) || errors.As(err, &appErr) && appErr.Remote && appErr.ErrorCode == errCodeClusterMismatch {
		return false, fmt.Errorf("peer refused us: cluster id mismatch (ours %q): %w", p.q.clusterID(), err)
	}
	return true, err
}

func (p *peer) dial(ctx context.Context, addr string) (*quic.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	ua, err := resolveUDP(ctx, addr)
	if err != nil {
		return nil, err
	}
	conn, err := p.q.dialTracked(ctx, ua, p.tls)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

// resolveUDP resolves host:port honouring ctx (net.ResolveUDPAddr cannot be
// cancelled, and a hung DNS lookup must not wedge the sender).
func resolveUDP(ctx context.Context, addr string) (*net.UDPAddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("peer address %q: %w", addr, err)
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, "udp", port)
	if err != nil {
		return nil, fmt.Errorf("peer address %q: port: %w", addr, err)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(pn))), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("resolve peer address %q: %w", addr, err)
	}
	return net.UDPAddrFromAddrPort(netip.AddrPortFrom(ips[0].Unmap(), uint16(pn))), nil
}

// msgWriter is where a peer's messages are written: a TCP connection or a
// QUIC stream.
type msgWriter interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// openMessages opens the message stream: over TCP when the peer offers
// it and it has not failed in the last tcpRetryAfter, else on conn.
// dead, for TCP, reports the stream's end; closeW closes it.
func (p *peer) openMessages(ctx context.Context, conn *quic.Conn) (w msgWriter, dead <-chan error, closeW func(), err error) {
	if tc := p.tryTCP(ctx, conn); tc != nil {
		return tc, watchTCPAsync(tc), func() { _ = tc.Close() }, nil
	}
	octx, cancel := context.WithTimeout(ctx, dialTimeout)
	s, err := conn.OpenUniStreamSync(octx)
	cancel()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open message stream: %w", err)
	}
	return s, nil, func() { _ = s.Close() }, nil
}

// tryTCP dials the TCP message stream unless TCP failed recently; nil
// means QUIC.
func (p *peer) tryTCP(ctx context.Context, conn *quic.Conn) *tls.Conn {
	if p.tcpWaiting() {
		return nil
	}
	tc, err := p.dialTCP(ctx, conn.RemoteAddr().String())
	if err != nil {
		p.tcpFailed()
		if ctx.Err() == nil {
			p.q.met.tcpFallback.Inc()
			p.q.log.Info("raft messages to peer over QUIC: no TCP link", "peer", p.id, "addr", conn.RemoteAddr(), "err", err)
		}
		return nil
	}
	return tc
}

// writeHeader writes the message stream's header.
func writeHeader(w msgWriter, hdr []byte) error {
	_ = w.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("write stream header: %w", err)
	}
	return nil
}

func watchTCPAsync(tc *tls.Conn) <-chan error {
	dead := make(chan error, 1)
	go func() { dead <- watchTCP(tc) }()
	return dead
}

// serve writes queued messages on one long-lived stream until an error, an
// address change or shutdown.
func (p *peer) serve(ctx context.Context, conn *quic.Conn) error {
	s, dead, closeS, err := p.openMessages(ctx, conn)
	if err != nil {
		return err
	}
	defer func() { closeS() }() // the TCP stream's, once the messages moved there
	var upgrade chan *tls.Conn  // a TCP dial under way while on QUIC (raft_tcp.go)
	defer func() { abandonUpgrade(upgrade) }()
	hdr, err := streamHeader{kind: streamKindMessages, from: p.q.cfg.NodeID, clusterID: p.q.clusterID()}.marshal()
	if err != nil {
		return err
	}
	if err := writeHeader(s, hdr); err != nil {
		return err
	}
	p.setConnected(conn)
	p.setLink(dead != nil)
	p.q.log.Debug("connected to peer", "peer", p.id, "addr", conn.RemoteAddr(), "tcp", dead != nil)
	tick := time.NewTicker(checkInterval)
	defer tick.Stop()
	var batch []byte
	var types []raftpb.MessageType
	var answers answerWatch
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-conn.Context().Done():
			return fmt.Errorf("connection closed: %w", context.Cause(conn.Context()))
		case err := <-dead:
			return err
		case now := <-tick.C:
			p.updateRTT(conn)
			if dead != nil {
				continue // over TCP the kernel watches for answers (setTCPUserTimeout)
			}
			if d := answers.unanswered(now, conn.ConnectionStats().PacketsReceived); d >= unansweredAfter {
				p.q.met.unanswered.Inc()
				return fmt.Errorf("%w: nothing received for %s after a write", errUnanswered, d.Round(time.Millisecond))
			}
			if upgrade == nil {
				upgrade = p.startUpgrade(ctx, conn.RemoteAddr().String())
			}
		case tc := <-upgrade:
			upgrade = nil
			if tc == nil {
				continue
			}
			if err := writeHeader(tc, hdr); err != nil {
				_ = tc.Close()
				p.tcpFailed()
				continue
			}
			// Messages still in the QUIC stream's buffer go out before its
			// end; raft takes the two streams' messages in any order.
			closeS()
			s, dead, closeS = tc, watchTCPAsync(tc), func() { _ = tc.Close() }
			answers = answerWatch{}
			p.setLink(true)
			p.q.met.tcpUpgrades.Inc()
			p.q.log.Info("raft messages to peer over TCP again", "peer", p.id, "addr", conn.RemoteAddr())
		case m := <-p.snapc:
			p.snapWG.Go(func() { p.sendSnapshot(ctx, conn, m) })
		case m := <-p.msgc:
			// Coalesce whatever else is queued into one write.
			batch, types = append(batch[:0], m.data...), append(types[:0], m.typ)
			putOutBuf(m.data)
		drain:
			for len(batch) < maxBatchBytes {
				select {
				case m := <-p.msgc:
					batch, types = append(batch, m.data...), append(types, m.typ)
					putOutBuf(m.data)
				default:
					break drain
				}
			}
			_ = s.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := s.Write(batch); err != nil {
				p.q.met.dropped.Add(float64(len(types)))
				return fmt.Errorf("write %d messages: %w", len(types), err)
			}
			for _, t := range types {
				p.q.met.sent.WithLabelValues(t.String()).Inc()
			}
			p.touch()
			if dead == nil {
				answers.wrote(time.Now(), conn)
			}
			if cap(batch) > 4*maxBatchBytes {
				batch = nil // don't pin a buffer grown by one huge message
			}
		}
	}
}

// errUnanswered ends a connection whose writes drew no packet back for
// unansweredAfter.
var errUnanswered = errors.New("peer connection unanswered")

// answerWatch tells how long the oldest write on a connection has gone
// without any packet received after it (unansweredAfter says why that
// matters). A packet that answers an earlier write counts as an answer
// too; that can only delay the verdict by one more write, never make a
// working connection look dead.
type answerWatch struct {
	since time.Time // the oldest write not followed by a received packet; zero if none
	recv  uint64    // packets the connection had received at that write
}

// wrote records a write at now; conn is read only when no earlier write
// is still waiting.
func (w *answerWatch) wrote(now time.Time, conn interface{ ConnectionStats() quic.ConnectionStats }) {
	if w.since.IsZero() {
		w.since, w.recv = now, conn.ConnectionStats().PacketsReceived
	}
}

// unanswered returns how long the oldest write has waited, given the
// connection's count of received packets now; 0 once anything came back.
func (w *answerWatch) unanswered(now time.Time, received uint64) time.Duration {
	if w.since.IsZero() {
		return 0
	}
	if received != w.recv {
		w.since = time.Time{}
		return 0
	}
	return now.Sub(w.since)
}

// sendSnapshot sends one MsgSnap on its own bidirectional stream and waits for
// the receiver's acknowledgement, then reports Finish or Failure to raft.
func (p *peer) sendSnapshot(ctx context.Context, conn *quic.Conn, m outMsg) {
	// 1 minute plus 1 second per MiB: generous for LAN links, yet bounded.
	timeout := time.Minute + time.Duration(len(m.data)>>20)*time.Second
	err := func() error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		s, err := conn.OpenStreamSync(ctx)
		if err != nil {
			return fmt.Errorf("open snapshot stream: %w", err)
		}
		dl, _ := ctx.Deadline()
		_ = s.SetDeadline(dl)
		hdr, err := streamHeader{kind: streamKindSnapshot, from: p.q.cfg.NodeID, clusterID: p.q.clusterID()}.marshal()
		if err != nil {
			return err
		}
		if _, err := s.Write(append(hdr, m.data...)); err != nil {
			s.CancelRead(errCodeBadFrame)
			return fmt.Errorf("write snapshot: %w", err)
		}
		_ = s.Close()
		var ack [1]byte
		if _, err := io.ReadFull(s, ack[:]); err != nil { // Read may return the byte together with io.EOF
			return fmt.Errorf("read snapshot ack: %w", err)
		}
		if ack[0] != ackOK {
			return errors.New("peer failed to process snapshot")
		}
		return nil
	}()
	if err != nil {
		p.q.log.Warn("snapshot send failed", "peer", p.id, "bytes", len(m.data), "err", err)
		p.q.met.dropped.Inc()
		p.q.met.snapsFailed.Inc()
		p.q.rep.reportSnapshot(p.id, raft.SnapshotFailure)
		p.q.rep.reportUnreachable(p.id)
		return
	}
	p.q.met.sent.WithLabelValues(m.typ.String()).Inc()
	p.q.met.snapsSent.Inc()
	p.touch()
	p.q.rep.reportSnapshot(p.id, raft.SnapshotFinish)
}
