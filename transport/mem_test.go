package transport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

type memNode struct {
	t Transport
	h *recHandler
}

func memCluster(t *testing.T, n *MemNetwork, ids ...uint64) map[uint64]*memNode {
	t.Helper()
	out := map[uint64]*memNode{}
	for _, id := range ids {
		tr := n.Transport(id)
		h := newRecHandler()
		require.NoError(t, tr.Start(h))
		t.Cleanup(func() { _ = tr.Close() })
		for _, p := range ids {
			tr.AddPeer(p, "")
		}
		out[id] = &memNode{t: tr, h: h}
	}
	return out
}

func TestMemNetworkDeliveryAndPartition(t *testing.T) {
	t.Parallel()
	n := NewMemNetwork(1)
	c := memCluster(t, n, 1, 2, 3)
	require.Same(t, c[1].t, n.Transport(1)) // open transport is returned again

	c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1), msg(raftpb.MsgApp, 1, 3, 1)})
	c[3].t.Send([]*raftpb.Message{msg(raftpb.MsgAppResp, 3, 1, 1)})
	require.Eventually(t, func() bool {
		return c[2].h.countFrom(1) == 1 && c[3].h.countFrom(1) == 1 && c[1].h.countFrom(3) == 1
	}, waitFor, time.Millisecond)
	require.True(t, c[1].t.PeerStatus(2).Connected)
	require.False(t, c[1].t.PeerStatus(2).LastContact.IsZero())

	n.Partition([]uint64{1, 2}, []uint64{3})
	require.False(t, c[1].t.PeerStatus(3).Connected)
	require.True(t, c[1].t.PeerStatus(2).Connected)
	c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 2), msg(raftpb.MsgApp, 1, 3, 2), snapMsg(1, 3, []byte("s"))})
	c[3].t.Send([]*raftpb.Message{msg(raftpb.MsgAppResp, 3, 2, 2)})
	require.Eventually(t, func() bool {
		return c[2].h.countFrom(1) == 2 && c[1].h.unreachableCount(3) > 0 &&
			c[1].h.snapReports(3, raft.SnapshotFailure) == 1 && c[3].h.unreachableCount(2) > 0
	}, waitFor, time.Millisecond)
	require.Equal(t, 1, c[3].h.countFrom(1))
	require.Zero(t, c[2].h.countFrom(3))

	n.Heal()
	c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 3, 3), snapMsg(1, 3, []byte("s"))})
	require.Eventually(t, func() bool {
		return c[3].h.countFrom(1) == 3 && c[1].h.snapReports(3, raft.SnapshotFinish) == 1
	}, waitFor, time.Millisecond)

	n.Isolate(2)
	c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 9), msg(raftpb.MsgApp, 1, 3, 9)})
	require.Eventually(t, func() bool { return c[3].h.countFrom(1) == 4 && c[1].h.unreachableCount(2) > 0 }, waitFor, time.Millisecond)
	require.Equal(t, 2, c[2].h.countFrom(1))
	require.False(t, c[3].t.PeerStatus(2).Connected)
	n.Heal()
	require.True(t, c[3].t.PeerStatus(2).Connected)

	// Unknown peers are dropped; a snapshot to one reports Failure.
	c[1].t.Send([]*raftpb.Message{snapMsg(1, 99, nil)})
	require.Eventually(t, func() bool { return c[1].h.snapReports(99, raft.SnapshotFailure) == 1 }, waitFor, time.Millisecond)
}

func TestMemNetworkClosedNodeAndRestart(t *testing.T) {
	t.Parallel()
	n := NewMemNetwork(2)
	c := memCluster(t, n, 1, 2)
	require.NoError(t, c[2].t.Close())
	require.False(t, c[1].t.PeerStatus(2).Connected)
	c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1)})
	require.Eventually(t, func() bool { return c[1].h.unreachableCount(2) > 0 }, waitFor, time.Millisecond)

	// Restart: a fresh transport for id 2 receives from then on.
	tr := n.Transport(2)
	require.NotSame(t, c[2].t, tr)
	h := newRecHandler()
	require.NoError(t, tr.Start(h))
	t.Cleanup(func() { _ = tr.Close() })
	c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 2)})
	require.Eventually(t, func() bool { return h.countFrom(1) == 1 }, waitFor, time.Millisecond)
	require.Zero(t, c[2].h.countFrom(1))

	// RemovePeer: messages are dropped as for any unknown peer.
	c[1].t.RemovePeer(2)
	require.Equal(t, PeerStatus{}, c[1].t.PeerStatus(2))
}

func TestMemNetworkDropRate(t *testing.T) {
	t.Parallel()
	count := func(seed int64) int {
		n := NewMemNetwork(seed)
		c := memCluster(t, n, 1, 2)
		n.SetDropRate(0.5)
		const total = 1000
		for i := range total {
			c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, uint64(i))})
		}
		// Without delay, delivery is FIFO: once a loss-free marker arrives,
		// every surviving message before it has been processed.
		n.SetDropRate(0)
		c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 1<<40)})
		require.Eventually(t, func() bool {
			r := c[2].h.received()
			return len(r) > 0 && r[len(r)-1].GetIndex() == 1<<40
		}, waitFor, time.Millisecond)
		got := c[2].h.countFrom(1) - 1
		require.InDelta(t, total/2, got, total/10)
		n.SetDropRate(1)
		c[1].t.Send([]*raftpb.Message{snapMsg(1, 2, nil)})
		require.Eventually(t, func() bool { return c[1].h.snapReports(2, raft.SnapshotFailure) == 1 }, waitFor, time.Millisecond)
		return got
	}
	require.Equal(t, count(7), count(7), "same seed => same losses")
}

func TestMemNetworkDelayReorders(t *testing.T) {
	t.Parallel()
	n := NewMemNetwork(3)
	c := memCluster(t, n, 1, 2)
	n.SetDelay(time.Millisecond, 20*time.Millisecond)
	require.Equal(t, 21*time.Millisecond, c[1].t.PeerStatus(2).RTT)
	const total = 200
	for i := range total {
		c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, uint64(i))})
	}
	require.Eventually(t, func() bool { return c[2].h.countFrom(1) == total }, waitFor, time.Millisecond)
	inversions := 0
	got := c[2].h.received()
	for i := 1; i < len(got); i++ {
		if got[i].GetIndex() < got[i-1].GetIndex() {
			inversions++
		}
	}
	require.Positive(t, inversions, "random delays must reorder messages")

	// A partition created while messages are in flight drops them.
	n.SetDelay(50*time.Millisecond, 50*time.Millisecond)
	c[1].t.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1000)})
	n.Isolate(1)
	require.Eventually(t, func() bool { return c[1].h.unreachableCount(2) > 0 }, waitFor, time.Millisecond)
	require.Equal(t, total, c[2].h.countFrom(1))
}

func TestMemNetworkSendNeverBlocks(t *testing.T) {
	t.Parallel()
	n := NewMemNetwork(4)
	a := n.Transport(1)
	ha := newRecHandler()
	require.NoError(t, a.Start(ha))
	t.Cleanup(func() { _ = a.Close() })
	a.AddPeer(2, "")
	b := n.Transport(2) // never started: its inbox fills up
	t.Cleanup(func() { _ = b.Close() })
	start := time.Now()
	for i := range 2 * queueSize {
		a.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, uint64(i))})
	}
	require.Less(t, time.Since(start), 5*time.Second)
	require.Eventually(t, func() bool { return ha.unreachableCount(2) > 0 }, waitFor, time.Millisecond)
	hb := newRecHandler()
	require.NoError(t, b.Start(hb))
	require.Eventually(t, func() bool { return len(hb.received()) == queueSize }, waitFor, time.Millisecond)

	// Messages are cloned in Send: mutating the original afterwards (raft
	// reuses memory) does not change what the receiver sees.
	m := msg(raftpb.MsgApp, 1, 2, 5)
	a.Send([]*raftpb.Message{m})
	m.Index = new(uint64(6))
	require.Eventually(t, func() bool { return len(hb.received()) == queueSize+1 }, waitFor, time.Millisecond)
	require.Equal(t, uint64(5), hb.received()[queueSize].GetIndex())
}
