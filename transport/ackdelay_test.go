package transport

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingConn counts the datagrams a dialer sends, notes when the
// controller last sent it a path MTU probe, and can hold each datagram it
// sends for a while (a host so busy its timers fire late).
type countingConn struct {
	net.PacketConn
	sent      atomic.Int64
	lastProbe atomic.Int64 // unix nanoseconds
	late      atomic.Int64 // nanoseconds
}

func (c *countingConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	time.Sleep(time.Duration(c.late.Load())) // the lateness is the fault injected, not a wait
	c.sent.Add(1)
	return c.PacketConn.WriteTo(p, addr)
}

// mtuProbeAbove is the largest datagram these tests' controllers send other
// than path MTU probes: QUIC's initial packet size (handshake packets are
// padded to it; the echoed requests are tiny).
const mtuProbeAbove = 1280

func (c *countingConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(p)
	if n > mtuProbeAbove {
		c.lastProbe.Store(time.Now().UnixNano())
	}
	return n, addr, err
}

// sentPerExchange runs request/reply exchanges one interval apart over a
// real QUIC connection to a controller's worker listener and returns the
// datagrams the dialer sent per exchange, handshake excluded.
func sentPerExchange(t *testing.T, ctrlAddr string, bundle *TLSBundle, requestInterval, pace time.Duration) float64 {
	t.Helper()
	cc := &countingConn{}
	s := dialWorkerStreamWith(t, QUICDialerConfig{TLS: bundle, RequestInterval: requestInterval,
		wrapConn: func(u *net.UDPConn) net.PacketConn { cc.PacketConn = u; return cc }}, ctrlAddr)
	exchange := func() {
		_, err := s.Write([]byte("heartbeat"))
		require.NoError(t, err)
		_, err = readWithin(t, s, len("heartbeat"), waitFor)
		require.NoError(t, err)
	}
	tick := time.NewTicker(pace)
	defer tick.Stop()
	// Not counted: the handshake and what follows it (connection ids,
	// session tickets, path MTU probes), a few round trips long.
	for range 5 {
		exchange()
		<-tick.C
	}
	start := cc.sent.Load()
	const n = 12
	for range n {
		exchange()
		<-tick.C // the workload's shape (one request per interval), not a wait for a condition
	}
	return float64(cc.sent.Load()-start) / n
}

// A worker's heartbeat must cost two packets, not three: with its request
// interval set, the dialer's acknowledgement of a reply rides on the next
// request instead of going out alone 25 ms after the reply (the patch in
// third_party/quic-go). The default dialer is the control: it sends the
// lone acknowledgement.
func TestQUICDialer_AcknowledgementsRideOnTheNextRequest(t *testing.T) {
	t.Parallel()
	ctrl, _, bundles := startWorkerEcho(t)

	const pace = 100 * time.Millisecond
	// A busy machine only ever adds datagrams (a request late past the
	// acknowledgement delay, a path MTU probe in the counted window): CI
	// once saw 1.33. So the best of up to three runs is the figure; a
	// dialer that never lets the acknowledgement wait shows 2.00 in each.
	delayed := sentPerExchange(t, ctrl.q.Addr().String(), bundles[1], pace, pace)
	for try := 1; try < 3 && delayed > 1.25; try++ {
		delayed = min(delayed, sentPerExchange(t, ctrl.q.Addr().String(), bundles[1], pace, pace))
	}
	plain := sentPerExchange(t, ctrl.q.Addr().String(), bundles[1], 0, pace)
	t.Logf("datagrams sent by the dialer per exchange: %.2f with the request interval set, %.2f without", delayed, plain)
	require.LessOrEqual(t, delayed, 1.25, "the acknowledgement of each reply should ride on the next request")
	require.GreaterOrEqual(t, plain, 1.75, "control: QUIC's default acknowledges each reply in a packet of its own")
}

func TestAckDelays(t *testing.T) {
	maxAck, minPeer := ackDelays(0)
	require.Zero(t, maxAck)
	require.Zero(t, minPeer)
	maxAck, minPeer = ackDelays(time.Second)
	require.Equal(t, 1500*time.Millisecond, maxAck, "longer than an interval, so the next request carries the ACK")
	require.Equal(t, 500*time.Millisecond, minPeer)
	maxAck, minPeer = ackDelays(time.Hour)
	require.Equal(t, maxAckDelayCap, maxAck, "QUIC caps max_ack_delay below 2^14 ms")
	require.Equal(t, maxAckDelayCap, minPeer)
}
