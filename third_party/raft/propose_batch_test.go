// This file is corral's, not upstream's (see CORRAL.md).

package raft

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestNodeProposeBatch: the entries of one ProposeBatch are appended
// together, in order, and leave the leader in one MsgApp per follower.
func TestNodeProposeBatch(t *testing.T) {
	s := newTestMemoryStorage(withPeers(1, 2))
	rn := newTestRawNode(1, 10, 1, s)
	n := newNode(rn)
	go n.run()
	defer n.Stop()
	require.NoError(t, n.Campaign(context.Background()))
	// Elect 1: it needs 2's vote. (Only the node's goroutine may touch its
	// raft: the test reads Status and the Readys.)
	var last uint64
	for {
		rd := <-n.Ready()
		require.NoError(t, s.Append(rd.Entries))
		for _, e := range rd.Entries {
			last = e.GetIndex()
		}
		n.Advance()
		st := n.Status()
		if st.RaftState == StateLeader {
			break
		}
		if rd.SoftState != nil && rd.SoftState.RaftState == StateCandidate {
			require.NoError(t, n.Step(context.Background(), &pb.Message{From: new(uint64(2)), To: new(uint64(1)),
				Type: pb.MsgVoteResp.Enum(), Term: st.Term}))
		}
	}
	// Take the leader's empty entry, and let 2 acknowledge it, so that the
	// leader replicates to 2 eagerly.
	deadline := time.Now().Add(5 * time.Second)
	for last == 0 || n.Status().GetCommit() < last {
		require.True(t, time.Now().Before(deadline), "the leader's entry never committed")
		select {
		case rd := <-n.Ready():
			require.NoError(t, s.Append(rd.Entries))
			for _, e := range rd.Entries {
				last = e.GetIndex()
			}
			n.Advance()
		default:
		}
		if last != 0 {
			require.NoError(t, n.Step(context.Background(), &pb.Message{From: new(uint64(2)), To: new(uint64(1)),
				Type: pb.MsgAppResp.Enum(), Term: n.Status().Term, Index: new(last)}))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, n.ProposeBatch(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c")}))
	var apps []*pb.Message
	var ents []*pb.Entry
	for len(ents) < 3 {
		rd := <-n.Ready()
		require.NoError(t, s.Append(rd.Entries))
		ents = append(ents, rd.Entries...)
		for _, m := range rd.Messages {
			if m.GetType() == pb.MsgApp && len(m.GetEntries()) > 0 {
				apps = append(apps, m)
			}
		}
		n.Advance()
	}
	require.Len(t, ents, 3)
	for i, want := range []string{"a", "b", "c"} {
		require.Equal(t, last+uint64(i)+1, ents[i].GetIndex())
		require.Equal(t, want, string(ents[i].GetData()))
	}
	require.Len(t, apps, 1, "one MsgApp to the follower for the batch")
	require.Len(t, apps[0].GetEntries(), 3)

	require.Error(t, n.ProposeBatch(ctx, nil))
}

// TestNodeProposeBatchDropped: a follower that knows no leader drops the
// whole batch, and says so.
func TestNodeProposeBatchDropped(t *testing.T) {
	s := newTestMemoryStorage(withPeers(1, 2))
	rn := newTestRawNode(1, 10, 1, s)
	n := newNode(rn)
	rn.raft.becomeFollower(1, None)
	go n.run()
	defer n.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := n.ProposeBatch(ctx, [][]byte{[]byte("a"), []byte("b")})
	// With no leader the node does not take proposals at all: the context
	// ends the wait, and nothing was appended.
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, n.Status().GetCommit())
	select {
	case rd := <-n.Ready():
		require.Empty(t, rd.Entries)
	default:
	}
}
