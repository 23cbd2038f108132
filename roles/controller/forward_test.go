package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A proposal forwarded to a controller that knows no leader must not hold
// up the messages behind it on the same stream (the new leader's
// heartbeats among them): Process hands it to its own queue and returns.
func TestForwardedProposalNeverBlocksTheStream(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	others := mc.others(lead)
	mc.stopNode(lead)
	mc.stopNode(others[0])
	alone := mc.node(others[1])
	require.Eventually(t, func() bool { return alone.LeaderID() == 0 }, 10*time.Second, 10*time.Millisecond)

	var returned atomic.Bool
	go func() {
		m := &pb.Message{Type: pb.MsgProp.Enum(), From: new(others[0]), To: new(others[1]),
			Entries: []*pb.Entry{{Data: []byte("x")}}}
		_ = alone.r.Process(context.Background(), m)
		returned.Store(true)
	}()
	require.Eventually(t, returned.Load, 2*time.Second, 5*time.Millisecond,
		"Process blocked on a forwarded proposal while the node knows no leader")
}

// A proposal held up in a deposed leader's inbox must not commit once that
// leader resumes as a follower and forwards it to its successor: its
// proposer was told the leader changed and its client may have retried, so
// committing it too would apply one request twice, the second time after
// later writes (how a retried try-lock could take a lock its client was
// told was busy). Every replica skips an entry appended in another term
// than its proposer's (metadata.ApplyEntry).
func TestForwardedProposalAcrossALeaderChangeIsNotApplied(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	others := mc.others(lead)
	f := others[0]
	// The follower's proposals to the leader stay in the leader's "inbox".
	mc.net.Hold(func(from uint64, m *pb.Message) bool {
		return from == f && m.GetTo() == lead && m.GetType() == pb.MsgProp
	})
	proposed := make(chan error, 1)
	go func() {
		_, err := mc.put(f, "late", "first attempt")
		proposed <- err
	}()
	require.Eventually(t, func() bool { return mc.net.Held() == 1 }, 5*time.Second, 5*time.Millisecond)

	// The leader is cut off; the others elect a successor, and the proposer
	// hears that its leader changed.
	mc.net.Isolate(lead)
	newLead := mc.waitLeader(others...)
	select {
	case err := <-proposed:
		require.Error(t, err, "the first attempt cannot have been applied")
	case <-time.After(10 * time.Second):
		t.Fatal("the proposer was not told that its leader changed")
	}
	// Its client retries and moves on.
	_, err := mc.put(newLead, "late", "retry")
	require.NoError(t, err)
	_, err = mc.put(newLead, "late", "after the retry")
	require.NoError(t, err)

	// The old leader rejoins as a follower and then finds the held proposal,
	// which it forwards to the new leader.
	mc.net.Heal()
	require.Eventually(t, func() bool { return mc.node(lead).LeaderID() == newLead }, 10*time.Second, 5*time.Millisecond)
	mc.net.ReleaseHeld()
	// Every replica must see the forwarded entry commit, and skip it.
	for _, id := range mc.ids() {
		require.Eventually(t, func() bool {
			return counterSum(t, mc.node(id).Registry(), "corral_raft_entries_term_changed_total") == 1
		}, 10*time.Second, 5*time.Millisecond, "controller %d never skipped the forwarded proposal", id)
		kv, ok := mc.node(id).State().Get("late")
		require.True(t, ok)
		require.Equal(t, "after the retry", string(kv.Value), "controller %d applied a proposal from a deposed term after later writes", id)
	}
}
