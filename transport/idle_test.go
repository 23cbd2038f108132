package transport

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// settle exchanges every 20 ms until the controller's path MTU discovery is
// over (no probe for half a second): the dialer acknowledges a lone packet
// only after 1.5 request intervals, so a probe sent in a counted idle
// period would cost one datagram each, up to five, which is not what the
// tests count. The requests carry the acknowledgements here.
func settle(t *testing.T, exchange func() error, cc *countingConn) {
	t.Helper()
	const quiet = 500 * time.Millisecond
	start := time.Now()
	for n := 0; ; n++ {
		require.NoError(t, exchange())
		last := time.Unix(0, cc.lastProbe.Load())
		if n >= 5 && time.Since(last) > quiet && time.Since(start) > quiet {
			return
		}
		require.Less(t, time.Since(start), waitFor, "the controller kept sending path MTU probes")
		time.Sleep(20 * time.Millisecond) // the requests' pace, not a wait for a condition
	}
}

// heartbeatExchange returns a function that writes one request on s and
// reads its echo.
func heartbeatExchange(t *testing.T, s Stream) func() error {
	return func() error {
		if _, err := s.Write([]byte("heartbeat")); err != nil {
			return err
		}
		_, err := readWithin(t, s, len("heartbeat"), waitFor)
		return err
	}
}

// idleDatagrams dials the controller's worker listener, exchanges until
// the connection settled (settle), leaves the connection idle for idle, and returns the datagrams
// the dialer sent meanwhile and whether an exchange works after it. A
// keep-alive ping from either side shows: the dialer's own, or its
// acknowledgement of the controller's.
func idleDatagrams(t *testing.T, ctrlAddr string, bundle *TLSBundle, cfg QUICDialerConfig, idle time.Duration) (int64, error) {
	t.Helper()
	cc := &countingConn{}
	cfg.TLS = bundle
	cfg.wrapConn = func(u *net.UDPConn) net.PacketConn { cc.PacketConn = u; return cc }
	exchange := heartbeatExchange(t, dialWorkerStreamWith(t, cfg, ctrlAddr))
	settle(t, exchange, cc)
	start := cc.sent.Load()
	time.Sleep(idle) // the idle period is what is tested, not a wait for a condition
	sent := cc.sent.Load() - start
	return sent, exchange()
}

// A worker's connections carry its own traffic often enough (heartbeats,
// standby pings), so its dialer asks the controller for the longest idle
// timeout and neither side sends QUIC keep-alive pings: at thousands of
// workers those pings on idle standbys cost the followers as much CPU as
// the heartbeats cost the leader. The connection must then stay idle past
// the 6 s the controllers give each other, and cost no datagram while it
// does. The default dialer is the control: its connections ping.
func TestQUICDialer_IdleTimeoutSendsNoKeepAlives(t *testing.T) {
	t.Parallel()
	ctrl, _, bundles := startWorkerEcho(t)
	addr := ctrl.q.Addr().String()

	idle := idleTimeout + time.Second
	type result struct {
		sent int64
		err  error
	}
	quiet, control := make(chan result, 1), make(chan result, 1)
	go func() {
		sent, err := idleDatagrams(t, addr, bundles[1], QUICDialerConfig{RequestInterval: time.Second, IdleTimeout: MaxIdleTimeout}, idle)
		quiet <- result{sent, err}
	}()
	go func() {
		sent, err := idleDatagrams(t, addr, bundles[1], QUICDialerConfig{RequestInterval: time.Second}, idle)
		control <- result{sent, err}
	}()
	q, c := <-quiet, <-control
	t.Logf("datagrams sent by an idle dialer over %s: %d with IdleTimeout, %d without", idle, q.sent, c.sent)
	require.NoError(t, q.err, "the connection must outlive the controllers' own 6 s idle timeout")
	// One datagram is the acknowledgement of the last reply, held for a
	// next request that never came (ackDelays); one more is slack for a
	// path MTU probe falling in the window.
	require.LessOrEqual(t, q.sent, int64(2), "no keep-alive pings from either side")
	require.NoError(t, c.err)
	require.GreaterOrEqual(t, c.sent, int64(3), "control: the default dialer pings every 2 s")
}

// The dialer acknowledges a lone reply after 1.5 intervals (ackDelays) and
// tells the controller so; the controller probes once that much time and
// its own margin have passed without an acknowledgement. That margin was
// the round trip's variance plus a millisecond, so a dialer whose timer
// fired a few milliseconds late drew a probe, whose acknowledgement was
// late in turn: an idle standby connection cost a packet each way every
// 1.5 s for as long as its host was busy. The patch in third_party/quic-go
// advertises an eighth more than the dialer waits.
func TestQUICDialer_LateAckTimerDrawsNoProbes(t *testing.T) {
	t.Parallel()
	ctrl, _, bundles := startWorkerEcho(t)
	cc := &countingConn{}
	s := dialWorkerStreamWith(t, QUICDialerConfig{TLS: bundles[1], RequestInterval: time.Second, IdleTimeout: MaxIdleTimeout,
		wrapConn: func(u *net.UDPConn) net.PacketConn { cc.PacketConn = u; return cc }}, ctrl.q.Addr().String())
	settle(t, heartbeatExchange(t, s), cc)
	cc.late.Store(int64(50 * time.Millisecond))
	start := cc.sent.Load()
	time.Sleep(6 * time.Second) // the idle period is what is tested
	sent := cc.sent.Load() - start
	t.Logf("datagrams sent over 6 s by an idle dialer whose packets leave 50 ms late: %d", sent)
	// One: the acknowledgement of the last reply.
	require.LessOrEqual(t, sent, int64(1), "a late acknowledgement must not draw a probe")
}
