package raft

import (
	"bytes"

	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// Commit notices (corral's patch, Config.CommitNotices; see CORRAL.md).
//
// When the commit index moves, upstream's leader sends every follower a
// MsgApp, empty when the follower already has every entry, so that it
// learns the new index at once rather than at the next heartbeat. The
// follower answers that MsgApp like any other, with a MsgAppResp for the
// last index it holds: for a follower that has (or is about to)
// acknowledged those entries, an answer that tells the leader nothing.
// With one write at a time that is half of all the messages followers
// send, each an encode, a network write, a read, a decode and a step.
//
// A notice is that empty MsgApp, marked in its Context. The leader sends
// one only to a follower in StateReplicate to which it has sent every
// entry (Next-1 is its last index) and whose flow is neither paused nor
// full of appends in flight: the answers it still needs, for those
// entries, are on their way or already in. A follower that accepts a notice updates its commit index
// and answers nothing; one whose log does not hold the notice's position
// (an entry before it was lost on the way) rejects it as any MsgApp, so
// the leader learns and probes as before. An answer lost on the way is
// recovered as before, through the heartbeat: a follower whose Match
// lags gets an ordinary MsgApp in reply to its MsgHeartbeatResp.

// commitNoticeContext marks a MsgApp as a commit notice. A follower that
// does not know the mark (upstream's raft) answers it: the leader then
// gets the answers upstream gets.
var commitNoticeContext = []byte("corral-commit-notice")

// isCommitNotice reports whether m is a commit notice: a MsgApp with the
// mark and no entries (a MsgApp carrying entries is always answered).
func isCommitNotice(m *pb.Message) bool {
	return m.GetType() == pb.MsgApp && len(m.GetEntries()) == 0 &&
		bytes.Equal(m.GetContext(), commitNoticeContext)
}

// bcastCommit is bcastAppend after the commit index moved: a notice to
// each follower that has been sent everything, an ordinary MsgApp (with
// entries, or empty as a probe) to the others.
func (r *raft) bcastCommit() {
	r.trk.Visit(func(id uint64, pr *tracker.Progress) {
		if id == r.id {
			return
		}
		if !r.maybeSendCommitNotice(id, pr) {
			r.sendAppend(id)
		}
	})
}

// maybeSendCommitNotice sends the follower id a commit notice if it may
// have one, and says whether it did.
func (r *raft) maybeSendCommitNotice(id uint64, pr *tracker.Progress) bool {
	if pr.State != tracker.StateReplicate || pr.IsPaused() || pr.Inflights.Full() || pr.Next-1 != r.raftLog.lastIndex() {
		return false
	}
	prevIndex := pr.Next - 1
	prevTerm, err := r.raftLog.term(prevIndex)
	if err != nil {
		return false // compacted: sendAppend decides (a snapshot)
	}
	r.send(&pb.Message{
		To:      new(id),
		Type:    pb.MsgApp.Enum(),
		Index:   new(prevIndex),
		LogTerm: new(prevTerm),
		Commit:  new(r.raftLog.committed),
		Context: commitNoticeContext,
	})
	pr.SentCommit(r.raftLog.committed)
	return true
}
