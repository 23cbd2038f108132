// This file is corral's, not upstream's (see CORRAL.md).

package raft

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	pb "go.etcd.io/raft/v3/raftpb"
)

// step steps m and delivers what raft sends itself once its log is
// written (its own vote), as upstream's tests do.
func step(t *testing.T, r *raft, m *pb.Message) {
	t.Helper()
	require.NoError(t, r.Step(m))
	r.advanceMessagesAfterAppend()
}

func hupUnlessCandidate() *pb.Message {
	return &pb.Message{From: new(uint64(1)), To: new(uint64(1)), Type: pb.MsgHup.Enum(), Context: []byte(campaignUnlessCandidate)}
}

// TestCampaignUnlessCandidate: from a follower or a pre-candidate the
// message campaigns as MsgHup does; a candidate ignores it and keeps its
// term and the votes it has, and wins with the next one. A plain MsgHup
// at that moment starts over (the race a caller reading Status first
// cannot rule out).
func TestCampaignUnlessCandidate(t *testing.T) {
	for _, plain := range []bool{false, true} {
		r := newTestRaft(1, 10, 1, newTestMemoryStorage(withPeers(1, 2, 3)))
		r.preVote = true
		r.becomeFollower(1, None)
		step(t, r, hupUnlessCandidate())
		require.Equal(t, StatePreCandidate, r.state, "a follower campaigns")
		step(t, r, hupUnlessCandidate())
		require.Equal(t, StatePreCandidate, r.state, "a pre-candidate campaigns again")
		require.Equal(t, uint64(1), r.Term)

		require.NoError(t, r.Step(&pb.Message{From: new(uint64(2)), To: new(uint64(1)),
			Type: pb.MsgPreVoteResp.Enum(), Term: new(uint64(2))}))
		require.Equal(t, StateCandidate, r.state)
		require.Equal(t, uint64(2), r.Term)

		if plain {
			step(t, r, &pb.Message{From: new(uint64(1)), To: new(uint64(1)), Type: pb.MsgHup.Enum()})
			require.Equal(t, StatePreCandidate, r.state, "upstream: a candidate starts over")
			continue
		}
		step(t, r, hupUnlessCandidate())
		require.Equal(t, StateCandidate, r.state, "a candidate ignores it")
		require.Equal(t, uint64(2), r.Term)
		require.NoError(t, r.Step(&pb.Message{From: new(uint64(2)), To: new(uint64(1)),
			Type: pb.MsgVoteResp.Enum(), Term: new(uint64(2))}))
		require.Equal(t, StateLeader, r.state, "the vote on its way still counts")
		require.Equal(t, uint64(2), r.Term)
		step(t, r, hupUnlessCandidate())
		require.Equal(t, StateLeader, r.state, "a leader ignores it")
	}
}

// TestNodeCampaignUnlessCandidate: the node's method reaches raft.
func TestNodeCampaignUnlessCandidate(t *testing.T) {
	s := newTestMemoryStorage(withPeers(1, 2, 3))
	rn := newTestRawNode(1, 10, 1, s)
	n := newNode(rn)
	go n.run()
	defer n.Stop()
	require.NoError(t, n.CampaignUnlessCandidate(context.Background()))
	require.Equal(t, StateCandidate, n.Status().RaftState) // no PreVote here
	term := n.Status().Term
	require.NoError(t, n.CampaignUnlessCandidate(context.Background()))
	require.Equal(t, StateCandidate, n.Status().RaftState)
	require.Equal(t, term, n.Status().Term, "a second call started another election")
}
