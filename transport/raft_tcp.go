package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/quic-go/quic-go"
)

// Raft messages travel over TCP with mutual TLS when they can. Each
// controller already listens on TCP at its cluster address for the
// liveness link (liveness.go); a peer's message stream is one more TLS
// connection there, told apart by its application protocol. The QUIC
// connection stays: snapshots go on it, its handshake is what the
// duplicate-node check sees (duplicate.go), and the messages fall back to
// it when TCP cannot be had (a firewall that passes only UDP, or a peer
// of an older version that does not offer this protocol).
//
// Why: a QUIC packet goes through quic-go's socket reader, its
// connection loop and the stream's reader, three goroutines where TCP
// has one, and leaves through the connection loop where a TCP writer
// makes the system call itself. With the processes idle between a lone
// client's writes, each of those is a thread woken: a round trip took
// about 110 µs longer over QUIC and twice the receiving process's CPU
// (docs/PERFORMANCE.md, "One hop over QUIC and over TCP"), and one-client
// ZooKeeper writes ran 20-24 % faster with the messages over TCP ("Raft
// messages over TCP").

// ALPNRaftTCP is the TLS application protocol of a raft message stream
// over TCP. The stream starts with the same header as on QUIC (node id,
// cluster id), checked the same way against the certificate.
const ALPNRaftTCP = "corral-raft-tcp/1"

const (
	// tcpDialTimeout bounds the TCP dial and handshake; the QUIC
	// connection to the same address has just been made, so a peer
	// that does not answer on TCP within this is not going to.
	tcpDialTimeout = time.Second
	// tcpRetryAfter is how long messages stay on QUIC after TCP failed,
	// before TCP is tried again.
	tcpRetryAfter = 10 * time.Second
)

// errTCPClusterMismatch is a TCP message stream the peer refused because
// it belongs to another cluster (tcpLink.refuse sent that reason).
var errTCPClusterMismatch = errors.New("peer refused the message stream: cluster id mismatch")

// tcpLink is the inLink of a message stream that arrived over TCP.
type tcpLink struct {
	q  *QUIC
	tc *tls.Conn
}

func (l tcpLink) remote() string { return l.tc.RemoteAddr().String() }
func (l tcpLink) gone() bool     { return l.q.ctx.Err() != nil }

// refuse tells the sender why in one byte (TCP has no application error
// codes), then closes the connection.
func (l tcpLink) refuse(code quic.ApplicationErrorCode, _ string) {
	_ = l.tc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = l.tc.Write([]byte{byte(code & 0xff)}) // the codes differ in their low byte
	_ = l.tc.Close()
}

// serveRaftTCP reads one peer's raft messages from a TCP connection of the
// cluster port. The handshake already required a controller certificate
// of this cluster (rolesFor); the stream header must name the same node.
func (q *QUIC) serveRaftTCP(tc *tls.Conn) {
	defer tc.Close()
	peer, err := PeerIdentity(tc.ConnectionState())
	node := peer.NodeID()
	if err != nil || node == 0 {
		q.onReject(fmt.Errorf("%w: raft stream over TCP from %s without a controller identity", ErrRoleNotAllowed, tc.RemoteAddr()))
		return
	}
	if c, ok := tc.NetConn().(*net.TCPConn); ok {
		_ = c.SetKeepAliveConfig(tcpKeepAlive)
	}
	_ = tc.SetReadDeadline(time.Now().Add(headerTimeout))
	q.readMessageStream(tcpLink{q, tc}, node, tc, func() { _ = tc.SetReadDeadline(time.Time{}) }, func() { _ = tc.Close() })
}

// tcpKeepAlive ends a TCP message stream whose peer is gone without a
// word (a partition, a host lost) within about 5 s at either end, as
// QUIC's idle timeout would (6 s). A follower's stream can stay quiet for
// as long as nothing changes, so silence alone proves nothing.
var tcpKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 2 * time.Second, Interval: time.Second, Count: 3}

// dialTCP opens the message stream to the peer at addr (the QUIC
// connection's address: the same host and port number).
func (p *peer) dialTCP(ctx context.Context, addr string) (*tls.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, tcpDialTimeout)
	defer cancel()
	d := tls.Dialer{
		NetDialer: &net.Dialer{KeepAliveConfig: tcpKeepAlive, Control: setTCPUserTimeout},
		Config:    p.q.cfg.TLS.clientConfig(p.q.onReject, p.id, ALPNRaftTCP),
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*tls.Conn)
	if tc.ConnectionState().NegotiatedProtocol != ALPNRaftTCP {
		tc.Close()
		return nil, errors.New("peer does not offer raft over TCP")
	}
	return tc, nil
}

// tcpFailed keeps the messages on QUIC for the next tcpRetryAfter.
func (p *peer) tcpFailed() {
	p.mu.Lock()
	p.tcpRetry = time.Now().Add(p.q.tcpRetryAfter)
	p.mu.Unlock()
}

// tcpWaiting reports whether TCP failed within the last tcpRetryAfter.
func (p *peer) tcpWaiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.tcpRetry)
}

// startUpgrade dials the TCP message stream in the background while the
// messages go over QUIC, once tcpRetryAfter has passed since TCP last
// failed; the channel delivers the stream, or nil. Without it a stream
// that fell back stayed on QUIC for as long as the QUIC connection lived:
// after a restart of three controllers holding 340,000 znodes, every
// dial had timed out while the peers restored their state, and all six
// streams ran on QUIC from then on. Nil when it is not time yet.
func (p *peer) startUpgrade(ctx context.Context, addr string) chan *tls.Conn {
	if p.tcpWaiting() {
		return nil
	}
	ch := make(chan *tls.Conn, 1)
	go func() {
		tc, err := p.dialTCP(ctx, addr)
		if err != nil {
			p.tcpFailed()
			p.q.log.Debug("raft messages to peer stay on QUIC: no TCP link yet", "peer", p.id, "addr", addr, "err", err)
			tc = nil
		}
		ch <- tc
	}()
	return ch
}

// abandonUpgrade closes the stream of a dial that ends after its serve
// loop did (the dial itself ends with the loop's context, within
// tcpDialTimeout).
func abandonUpgrade(ch chan *tls.Conn) {
	if ch == nil {
		return
	}
	go func() {
		if tc := <-ch; tc != nil {
			_ = tc.Close()
		}
	}()
}

// watchTCP waits for the peer to close the message stream (it never sends
// on it, except one byte saying why it refused it) and returns why.
func watchTCP(tc *tls.Conn) error {
	var b [1]byte
	n, err := tc.Read(b[:])
	if n == 1 && quic.ApplicationErrorCode(b[0]) == errCodeClusterMismatch&0xff {
		return errTCPClusterMismatch
	}
	if n == 1 {
		return fmt.Errorf("peer refused the message stream (code %#x)", b[0])
	}
	if err == nil || errors.Is(err, io.EOF) {
		return errors.New("peer closed the message stream")
	}
	return fmt.Errorf("message stream: %w", err)
}
