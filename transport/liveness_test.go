package transport

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// accepted is how many liveness connections s took in so far.
func (s *livenessServer) acceptedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// watching starts a watching b and waits until its link is up.
func watching(t *testing.T, a, b *testNode, bID uint64) {
	t.Helper()
	require.NotNil(t, b.q.live, "liveness listener of node %d", bID)
	before := b.q.live.acceptedCount()
	a.q.AddPeer(bID, b.q.Addr().String())
	require.Eventually(t, func() bool { return b.q.live.acceptedCount() > before && linkUp(a, bID) }, waitFor, 5*time.Millisecond)
}

// linkUp reports whether a holds an established liveness link to id.
func linkUp(a *testNode, id uint64) bool {
	a.q.mu.RLock()
	p := a.q.peers[id]
	a.q.mu.RUnlock()
	return p != nil && p.liveUp.Load()
}

func TestLiveness_ClosedPeerIsReportedGone(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	watching(t, a, b, 2)
	require.Zero(t, a.h.goneCount(2))
	require.NoError(t, b.q.Close())
	require.Eventually(t, func() bool { return a.h.goneCount(2) == 1 }, waitFor, 5*time.Millisecond)
	require.Equal(t, 1.0, testutil.ToFloat64(a.q.met.peerDeaths))
}

func TestLiveness_CrashedAndRestartedPeerIsReportedGone(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	watching(t, a, b, 2)
	addr := b.q.Addr().String()
	crashNode(b.q)
	b2 := startNode(t, 2, bs[1], addr, "")
	require.Eventually(t, func() bool { return a.h.goneCount(2) >= 1 }, waitFor, 5*time.Millisecond)
	// And the link is up again, to the new process.
	require.Eventually(t, func() bool { return b2.q.live.acceptedCount() >= 1 }, waitFor, 5*time.Millisecond)
}

// A connection lost while the peer's process lives (something on the path
// reset it) is not its death: the redial meets the same incarnation.
func TestLiveness_LostConnectionIsNotDeath(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	watching(t, a, b, 2)
	for want := 2; want <= 3; want++ {
		b.q.live.dropConns()
		require.Eventually(t, func() bool { return b.q.live.acceptedCount() >= want }, waitFor, 5*time.Millisecond)
	}
	// The third connection was taken in after the watcher judged the
	// second: had it judged wrong, the report would be here.
	require.Zero(t, a.h.goneCount(2))
	require.Zero(t, testutil.ToFloat64(a.q.met.peerDeaths))
}

// Only controllers of the cluster may hold the link, and a watcher
// never takes another node's answer for its peer's.
func TestLiveness_WrongPeerNeverReported(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 3)
	a := startNode(t, 1, bs[0], "", "")
	c := startNode(t, 3, bs[2], "", "")
	// a believes node 2 lives at c's address: the handshake fails (c is
	// node 3), so no link is held and c's death says nothing about 2.
	a.q.AddPeer(2, c.q.Addr().String())
	require.NoError(t, c.q.Close())
	require.Never(t, func() bool { return a.h.goneCount(2) > 0 }, 500*time.Millisecond, 20*time.Millisecond)
}

// A process that is ending closes its connections a moment before its
// listener: a redial in that moment is accepted by the kernel and reset.
// The confirming redial tries again, and finds nothing listening.
func TestLiveness_RedialRetriesAResetWhileThePeerExits(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close() // the reset of the exiting process
		}
		ln.Close() // then its listener goes
	}()
	p := newPeer(a.q, 2, ln.Addr().String())
	_, err = p.confirmDial(p.q.cfg.TLS.clientConfig(nil, 2, ALPNLiveness))
	require.True(t, refused(err), "want a refused dial after the reset, got %v", err)
}

// The listener takes a bounded number of connections, and one that never
// finishes its handshake gives its slot back after the handshake deadline:
// strangers holding every slot delay a peer's link, never the node.
func TestLiveness_StrangersHoldingEverySlotOnlyDelayAPeer(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	var strangers []net.Conn
	for range maxLivenessConns + 16 {
		c, err := net.Dial("tcp", b.q.Addr().String())
		require.NoError(t, err)
		strangers = append(strangers, c)
	}
	t.Cleanup(func() {
		for _, c := range strangers {
			c.Close()
		}
	})
	require.Eventually(t, func() bool { return b.q.live.acceptedCount() >= maxLivenessConns }, waitFor, 5*time.Millisecond)
	b.q.live.mu.Lock()
	open := len(b.q.live.conns)
	b.q.live.mu.Unlock()
	require.LessOrEqual(t, open, maxLivenessConns)
	a.q.AddPeer(2, b.q.Addr().String())
	require.Eventually(t, func() bool { return linkUp(a, 2) }, waitFor, 10*time.Millisecond,
		"the peer's link never came up once the strangers' handshakes timed out")
}
