package transport

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// fakeStats is a connection whose received-packet count the test sets.
type fakeStats struct {
	recv  uint64
	reads int
}

func (f *fakeStats) ConnectionStats() quic.ConnectionStats {
	f.reads++
	return quic.ConnectionStats{PacketsReceived: f.recv}
}

func TestAnswerWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w answerWatch
	conn := &fakeStats{recv: 5}
	require.Zero(t, w.unanswered(t0, 5), "nothing written: nothing waits")

	w.wrote(t0, conn)
	w.wrote(t0.Add(time.Second), conn) // a later write does not restart the wait
	require.Equal(t, 1, conn.reads, "stats read once per wait")
	require.Equal(t, 1500*time.Millisecond, w.unanswered(t0.Add(1500*time.Millisecond), 5))
	require.Equal(t, 3*time.Second, w.unanswered(t0.Add(3*time.Second), 5), "still waiting")

	require.Zero(t, w.unanswered(t0.Add(3100*time.Millisecond), 6), "a packet came back")
	require.Zero(t, w.unanswered(t0.Add(9*time.Second), 6), "answered, and nothing written since")

	conn.recv = 6
	w.wrote(t0.Add(10*time.Second), conn)
	require.Equal(t, 2, conn.reads)
	require.Equal(t, 250*time.Millisecond, w.unanswered(t0.Add(10250*time.Millisecond), 6))
}

// udpRelay forwards datagrams between one client and a server through its
// own socket, and drops every one of them while cut: a path that loses
// everything, with both ends up and unaware.
type udpRelay struct {
	pc     net.PacketConn
	server *net.UDPAddr
	cut    atomic.Bool

	mu     sync.Mutex
	client net.Addr
}

func newUDPRelay(t *testing.T, server string) *udpRelay {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := net.ResolveUDPAddr("udp", server)
	require.NoError(t, err)
	r := &udpRelay{pc: pc, server: srv}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return // closed
			}
			if r.cut.Load() {
				continue
			}
			r.mu.Lock()
			to := net.Addr(r.server)
			if from.String() == r.server.String() {
				to = r.client
			} else {
				r.client = from
			}
			r.mu.Unlock()
			if to != nil {
				_, _ = pc.WriteTo(buf[:n], to)
			}
		}
	}()
	t.Cleanup(func() { _ = pc.Close(); <-done })
	return r
}

func (r *udpRelay) addr() string { return r.pc.LocalAddr().String() }

// A connection to a peer that stops answering is dialed again after
// unansweredAfter, not left to QUIC's idle timeout or to a retransmission
// that its backoff puts seconds away; once the path works again, messages
// flow on the new connection.
func TestQUICUnansweredPeerConnectionDialedAgain(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	relay := newUDPRelay(t, b.q.Addr().String())
	a.q.AddPeer(2, relay.addr())
	idx := uint64(0)
	send := func() {
		idx++
		a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, idx)})
	}
	require.Eventually(t, func() bool { send(); return b.h.countFrom(1) > 0 }, waitFor, 20*time.Millisecond)
	require.Zero(t, testutil.ToFloat64(a.q.met.unanswered), "a working connection is never unanswered")

	relay.cut.Store(true)
	cutAt := time.Now()
	// QUIC's own idle timeout (6 s) would close it too, later, and is not
	// counted: the counter moves only for unansweredAfter.
	require.Eventually(t, func() bool { send(); return testutil.ToFloat64(a.q.met.unanswered) > 0 },
		waitFor, 20*time.Millisecond, "the unanswered connection was never dropped")
	t.Logf("unanswered connection dropped %s after the cut", time.Since(cutAt).Round(time.Millisecond))

	relay.cut.Store(false)
	before := b.h.countFrom(1)
	require.Eventually(t, func() bool { send(); return b.h.countFrom(1) > before }, waitFor, 20*time.Millisecond)
	require.Eventually(t, func() bool { return a.q.PeerStatus(2).Connected }, waitFor, 10*time.Millisecond)
}

// A controller cut off the network fails its dials at once, so the wait
// between them reaches its cap within seconds: the cap is how late it
// reaches its peers after the network heals (maxBackoff).
func TestPeerDialWaitCappedAtASecond(t *testing.T) {
	d := minBackoff
	for range 20 {
		require.LessOrEqual(t, jitter(d), time.Second)
		d = nextBackoff(d)
	}
	require.Equal(t, time.Second, d)
}
