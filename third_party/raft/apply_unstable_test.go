// This file is corral's, not upstream's (see CORRAL.md).

package raft

import (
	"testing"

	"github.com/stretchr/testify/require"

	pb "go.etcd.io/raft/v3/raftpb"
)

// asyncLeader is a three-voter leader with asynchronous storage writes whose
// own log writes the test performs (or holds) by hand.
type asyncLeader struct {
	t    *testing.T
	rn   *RawNode
	s    *MemoryStorage
	held []*pb.Message // MsgStorageAppends not written yet
}

func newAsyncLeader(t *testing.T, applyUnstable bool) *asyncLeader {
	s := newTestMemoryStorage(withPeers(1, 2, 3))
	cfg := newTestConfig(1, 10, 1, s)
	cfg.AsyncStorageWrites = true
	cfg.ApplyUnstableCommitted = applyUnstable
	rn, err := NewRawNode(cfg)
	require.NoError(t, err)
	rn.raft.becomeCandidate()
	rn.raft.becomeLeader()
	l := &asyncLeader{t: t, rn: rn, s: s}
	// Commit and apply the leader's empty entry, writing as we go.
	last := rn.raft.raftLog.lastIndex()
	for range 10 {
		l.turn(true, last)
	}
	require.Equal(t, last, rn.raft.raftLog.applied, "the leader's empty entry was not applied")
	return l
}

// turn takes a Ready: it writes (or, unless write, holds) the leader's log
// writes, delivers their responses, applies what it is handed, and lets
// followers 2 and 3 acknowledge up to ack. It returns the indexes handed
// out for application.
func (l *asyncLeader) turn(write bool, ack uint64) (applied []uint64) {
	if !l.rn.HasReady() {
		l.followersAck(ack)
		return nil
	}
	rd := l.rn.Ready()
	for _, m := range rd.Messages {
		switch m.GetType() {
		case pb.MsgStorageAppend:
			l.held = append(l.held, m)
		case pb.MsgStorageApply:
			for _, e := range m.GetEntries() {
				applied = append(applied, e.GetIndex())
			}
			l.stepAll(m.GetResponses())
		}
	}
	if write {
		l.writeHeld()
	}
	l.followersAck(ack)
	return applied
}

func (l *asyncLeader) writeHeld() {
	held := l.held
	l.held = nil
	for _, m := range held {
		require.NoError(l.t, l.s.Append(m.GetEntries()))
		l.stepAll(m.GetResponses())
	}
}

func (l *asyncLeader) followersAck(index uint64) {
	for _, from := range []uint64{2, 3} {
		require.NoError(l.t, l.rn.Step(&pb.Message{From: new(from), To: new(uint64(1)),
			Type: pb.MsgAppResp.Enum(), Term: new(l.rn.raft.Term), Index: new(index)}))
	}
}

func (l *asyncLeader) stepAll(msgs []*pb.Message) {
	for _, m := range msgs {
		if m.GetTo() == 1 || m.GetTo() == LocalAppendThread || m.GetTo() == LocalApplyThread {
			require.NoError(l.t, l.rn.Step(m))
		}
	}
}

// TestApplyUnstableCommitted: with ApplyUnstableCommitted, a leader hands
// out an entry for application once two followers hold it, while its own
// write of it is still outstanding; without it, only after that write.
func TestApplyUnstableCommitted(t *testing.T) {
	for _, allow := range []bool{false, true} {
		l := newAsyncLeader(t, allow)
		require.NoError(t, l.rn.Propose([]byte("x")))
		next := l.rn.raft.raftLog.lastIndex()
		var early []uint64
		for range 5 {
			early = append(early, l.turn(false, next)...)
		}
		require.Equal(t, next, l.rn.raft.raftLog.committed, "allow=%v: two followers hold it: committed", allow)
		require.NotEmpty(t, l.held, "allow=%v: the leader's own write should be outstanding", allow)
		if allow {
			require.Equal(t, []uint64{next}, early, "handed out before the leader's own write")
		} else {
			require.Empty(t, early, "handed out before the leader's own write")
		}
		l.writeHeld()
		var late []uint64
		for range 5 {
			late = append(late, l.turn(true, next)...)
		}
		if allow {
			require.Empty(t, late, "handed out twice")
		} else {
			require.Equal(t, []uint64{next}, late, "not handed out after the leader's own write")
		}
		require.Equal(t, next, l.rn.raft.raftLog.applied)
	}
}

// TestApplyUnstableCommittedSingleVoter: alone, a leader's own write is the
// quorum, so nothing is handed out before it whatever the option says.
func TestApplyUnstableCommittedSingleVoter(t *testing.T) {
	s := newTestMemoryStorage(withPeers(1))
	cfg := newTestConfig(1, 10, 1, s)
	cfg.AsyncStorageWrites, cfg.ApplyUnstableCommitted = true, true
	rn, err := NewRawNode(cfg)
	require.NoError(t, err)
	rn.raft.becomeCandidate()
	rn.raft.becomeLeader()
	require.NoError(t, rn.Propose([]byte("x")))
	for range 5 {
		if !rn.HasReady() {
			break
		}
		for _, m := range rn.Ready().Messages {
			require.NotEqual(t, pb.MsgStorageApply, m.GetType(), "applied before its only copy was written")
		}
	}
}
