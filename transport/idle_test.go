package transport

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// idleDatagrams dials the controller's worker listener, makes one
// exchange, leaves the connection idle for idle, and returns the datagrams
// the dialer sent meanwhile and whether an exchange works after it. A
// keep-alive ping from either side shows: the dialer's own, or its
// acknowledgement of the controller's.
func idleDatagrams(t *testing.T, ctrlAddr string, bundle *TLSBundle, cfg QUICDialerConfig, idle time.Duration) (int64, error) {
	t.Helper()
	cc := &countingConn{}
	cfg.TLS = bundle
	cfg.wrapConn = func(u *net.UDPConn) net.PacketConn { cc.PacketConn = u; return cc }
	s := dialWorkerStreamWith(t, cfg, ctrlAddr)
	exchange := func() error {
		if _, err := s.Write([]byte("heartbeat")); err != nil {
			return err
		}
		_, err := readWithin(t, s, len("heartbeat"), waitFor)
		return err
	}
	require.NoError(t, exchange())
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
