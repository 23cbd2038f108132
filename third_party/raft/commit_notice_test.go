// This file is corral's, not upstream's (see CORRAL.md).

package raft

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// noticeNet is a three-voter network whose node 1 leads, every node with
// CommitNotices as given. It counts what crosses it from the moment
// counting starts.
type noticeNet struct {
	*network
	counting bool
	answers  map[uint64]int // accepting MsgAppResps, by sender
	rejects  int
	notices  int
	drop     func(*pb.Message) bool // optional: messages lost on the way
}

func newNoticeNet(t *testing.T, notices bool) *noticeNet {
	nn := &noticeNet{answers: map[uint64]int{}}
	nn.network = newNetworkWithConfig(func(c *Config) { c.CommitNotices = notices }, nil, nil, nil)
	nn.msgHook = func(m *pb.Message) bool {
		if nn.drop != nil && nn.drop(m) {
			return false
		}
		if !nn.counting {
			return true
		}
		switch {
		case m.GetType() == pb.MsgAppResp && m.GetReject():
			nn.rejects++
		case m.GetType() == pb.MsgAppResp:
			nn.answers[m.GetFrom()]++
		case isCommitNotice(m):
			nn.notices++
		}
		return true
	}
	nn.send(&pb.Message{From: new(uint64(1)), To: new(uint64(1)), Type: pb.MsgHup.Enum()})
	require.Equal(t, StateLeader, nn.raft(1).state)
	nn.counting = true
	return nn
}

func (nn *noticeNet) raft(id uint64) *raft { return nn.peers[id].(*raft) }

func (nn *noticeNet) propose() {
	nn.send(&pb.Message{From: new(uint64(1)), To: new(uint64(1)), Type: pb.MsgProp.Enum(),
		Entries: []*pb.Entry{{Data: []byte("w")}}})
}

// requireCaughtUp checks that every follower holds and knows committed
// everything the leader does.
func (nn *noticeNet) requireCaughtUp(t *testing.T) {
	t.Helper()
	l := nn.raft(1)
	require.Equal(t, l.raftLog.lastIndex(), l.raftLog.committed)
	for _, id := range []uint64{2, 3} {
		f := nn.raft(id)
		assert.Equal(t, l.raftLog.lastIndex(), f.raftLog.lastIndex(), "follower %d's log", id)
		assert.Equal(t, l.raftLog.committed, f.raftLog.committed, "follower %d's commit index", id)
		assert.Equal(t, l.raftLog.lastIndex(), l.trk.Progress[id].Match, "the leader's Match for %d", id)
	}
}

// TestCommitNoticesHalveTheFollowersAnswers: one write at a time, upstream's
// followers answer each write twice (the entries, then the empty MsgApp
// of the new commit index); with notices once, and they still learn every
// commit index at once.
func TestCommitNoticesHalveTheFollowersAnswers(t *testing.T) {
	const writes = 20
	for _, tc := range []struct {
		notices       bool
		answers, sent int
	}{
		{notices: false, answers: 2 * writes, sent: 0},
		{notices: true, answers: writes, sent: 2 * writes},
	} {
		nn := newNoticeNet(t, tc.notices)
		for range writes {
			nn.propose()
		}
		nn.requireCaughtUp(t)
		assert.Equal(t, tc.answers, nn.answers[2], "notices %v: answers from 2", tc.notices)
		assert.Equal(t, tc.answers, nn.answers[3], "notices %v: answers from 3", tc.notices)
		assert.Equal(t, tc.sent, nn.notices, "notices %v: notices sent", tc.notices)
		assert.Zero(t, nn.rejects)
	}
}

// TestCommitNoticeAfterALostEntryIsRejected: a follower that lost the
// entries before a notice rejects the notice as any MsgApp, and the leader
// sends them again.
func TestCommitNoticeAfterALostEntryIsRejected(t *testing.T) {
	nn := newNoticeNet(t, true)
	nn.propose()
	lost := false
	nn.drop = func(m *pb.Message) bool {
		if !lost && m.GetTo() == 3 && m.GetType() == pb.MsgApp && len(m.GetEntries()) > 0 {
			lost = true
			return true
		}
		return false
	}
	nn.propose()
	require.True(t, lost)
	assert.Equal(t, 1, nn.rejects, "follower 3 rejected the notice of an entry it does not hold")
	nn.requireCaughtUp(t)
}

// TestCommitNoticeLostAnswerRecoveredByHeartbeat: a follower's answer
// lost on the way leaves the leader's Match behind, and notices do not
// repair it; the next heartbeat's answer does, as upstream.
func TestCommitNoticeLostAnswerRecoveredByHeartbeat(t *testing.T) {
	nn := newNoticeNet(t, true)
	lost := false
	nn.drop = func(m *pb.Message) bool {
		if !lost && m.GetFrom() == 3 && m.GetType() == pb.MsgAppResp {
			lost = true
			return true
		}
		return false
	}
	nn.propose()
	require.True(t, lost)
	l := nn.raft(1)
	require.Less(t, l.trk.Progress[3].Match, l.raftLog.lastIndex(), "the lost answer left Match behind")
	nn.send(&pb.Message{From: new(uint64(1)), To: new(uint64(1)), Type: pb.MsgBeat.Enum()})
	nn.requireCaughtUp(t)
}

// TestCommitNoticeOnlyForAFollowerSentEverything: a probing follower, a
// paused one and one with entries still to send get an ordinary MsgApp.
func TestCommitNoticeOnlyForAFollowerSentEverything(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(pr *tracker.Progress)
		notice bool
	}{
		{"replicating, sent everything", func(*tracker.Progress) {}, true},
		{"probing", func(pr *tracker.Progress) { pr.BecomeProbe() }, false},
		{"entries still to send", func(pr *tracker.Progress) { pr.Next-- }, false},
		{"inflights full", func(pr *tracker.Progress) {
			for !pr.Inflights.Full() {
				pr.Inflights.Add(pr.Next-1, 1)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nn := newNoticeNet(t, true)
			l := nn.raft(1)
			pr := l.trk.Progress[2]
			require.Equal(t, tracker.StateReplicate, pr.State)
			tc.set(pr)
			l.bcastCommit()
			var to2 []*pb.Message
			for _, m := range l.readMessages() {
				if m.GetTo() == 2 {
					to2 = append(to2, m)
				}
			}
			require.Len(t, to2, 1)
			assert.Equal(t, pb.MsgApp, to2[0].GetType())
			assert.Equal(t, tc.notice, isCommitNotice(to2[0]))
		})
	}
}

// TestCommitNoticeFollower: a follower answers nothing to a notice it
// accepts, a rejection to one whose position it does not hold, and any
// marked MsgApp that carries entries.
func TestCommitNoticeFollower(t *testing.T) {
	s := newTestMemoryStorage(withPeers(1, 2, 3))
	require.NoError(t, s.Append([]*pb.Entry{{Index: new(uint64(1)), Term: new(uint64(1))}, {Index: new(uint64(2)), Term: new(uint64(1))}}))
	f := newTestRaft(2, 10, 1, s) // CommitNotices off: the mark is honoured anyway
	f.becomeFollower(1, 1)
	app := func(index, logTerm, commit uint64, ents ...*pb.Entry) *pb.Message {
		return &pb.Message{From: new(uint64(1)), To: new(uint64(2)), Type: pb.MsgApp.Enum(), Term: new(uint64(1)),
			Index: new(index), LogTerm: new(logTerm), Commit: new(commit), Entries: ents, Context: commitNoticeContext}
	}

	require.NoError(t, f.Step(app(2, 1, 2)))
	assert.Empty(t, f.readMessages(), "an accepted notice is not answered")
	assert.Equal(t, uint64(2), f.raftLog.committed, "the notice's commit index was taken")

	require.NoError(t, f.Step(app(5, 1, 5)))
	msgs := f.readMessages()
	require.Len(t, msgs, 1)
	assert.Equal(t, pb.MsgAppResp, msgs[0].GetType())
	assert.True(t, msgs[0].GetReject(), "a notice past the follower's log is rejected")

	require.NoError(t, f.Step(app(2, 1, 2, &pb.Entry{Index: new(uint64(3)), Term: new(uint64(1))})))
	msgs = f.readMessages()
	require.Len(t, msgs, 1)
	assert.Equal(t, pb.MsgAppResp, msgs[0].GetType())
	assert.False(t, msgs[0].GetReject())
	assert.Equal(t, uint64(3), msgs[0].GetIndex(), "a marked MsgApp with entries is answered")
}
