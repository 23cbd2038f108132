package replica

import (
	"slices"
	"strconv"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Raft trusts its peers: a message it would never send itself can make it
// panic (an empty MsgSnap, or an append response for an index past the
// leader's log, which sends it looking for a snapshot it does not have), or
// corrupt its log (entries that are not contiguous), or move leadership (a
// MsgTimeoutNow from anyone). The transport already checks that a message
// comes from the node its authenticated stream speaks for; validate checks
// that the message is one that node may send in its role and term before
// it reaches Step. A dropped message is counted by reason and logged once
// per peer and reason a minute; a legitimate message dropped by mistake
// costs a retransmission, never safety.

// Reasons a message is dropped (the reason label of
// corral_raft_messages_dropped_total).
const (
	dropNotMember     = "not_a_member"
	dropLocalType     = "local_only_type" // or a message without a term, which raft takes for a local one
	dropEmptySnapshot = "empty_snapshot"
	dropBadEntries    = "bad_entries"
	dropBadCommand    = "bad_command"
	dropPastLog       = "index_past_log"
	dropNotLeader     = "not_from_leader"
)

// validate returns "" for a message raft may step, else why to drop it.
func (c *Replica) validate(m *pb.Message) string {
	from := m.GetFrom()
	if from == 0 || from == c.cfg.NodeID || m.GetTo() != c.cfg.NodeID {
		return dropNotMember
	}
	// A node that knows no configuration yet (joining with an empty data
	// dir) learns it from the leader's messages: it takes them from any
	// authenticated peer.
	if cs := c.currentConfState(); len(cs.GetVoters()) > 0 &&
		!slices.Contains(cs.GetVoters(), from) && !slices.Contains(cs.GetLearners(), from) {
		return dropNotMember
	}
	// Raft takes a message with no term for a local one (an append with
	// term 0 would make its sender the leader): only a proposal and a read
	// request travel without a term.
	if t := m.GetType(); m.GetTerm() == 0 && t != pb.MsgProp && t != pb.MsgReadIndex {
		return dropLocalType
	}
	switch m.GetType() {
	case pb.MsgProp:
		// A forwarded proposal: raft panics on an empty one, and
		// configuration changes are proposed at the leader only
		// (membership.go), never forwarded.
		if len(m.GetEntries()) == 0 || m.GetTerm() != 0 {
			return dropBadEntries // raft panics on both
		}
		for _, e := range m.GetEntries() {
			if e.GetType() != pb.EntryNormal {
				return dropBadEntries
			}
			// An entry every replica would refuse to apply (an unknown op
			// or format halts apply, by design, so that an old binary never
			// skips a newer one's entry) would stop the whole cluster once
			// committed: it never gets into the log.
			if metadata.CheckApplicable(e.GetData()) != nil {
				return dropBadCommand
			}
		}
		return ""
	case pb.MsgReadIndex, pb.MsgReadIndexResp:
		// One entry, the request's context, which raft reads blindly; a
		// request carries no term (raft panics forwarding one that does).
		if len(m.GetEntries()) != 1 || (m.GetType() == pb.MsgReadIndex && m.GetTerm() != 0) {
			return dropBadEntries
		}
		return ""
	case pb.MsgVote, pb.MsgVoteResp, pb.MsgPreVote, pb.MsgPreVoteResp, pb.MsgHeartbeatResp:
		return ""
	case pb.MsgApp:
		if !entriesFollow(m) {
			return dropBadEntries
		}
		return c.fromLeader(m)
	case pb.MsgSnap:
		s := m.GetSnapshot()
		if s == nil || raft.IsEmptySnap(s) || s.GetMetadata().GetIndex() == 0 ||
			len(s.GetMetadata().GetConfState().GetVoters()) == 0 {
			return dropEmptySnapshot
		}
		return c.fromLeader(m)
	case pb.MsgHeartbeat:
		if !c.withinLog(m.GetCommit()) {
			return dropPastLog // raft would panic: commit beyond the log
		}
		return c.fromLeader(m)
	case pb.MsgAppResp:
		if !m.GetReject() && !c.withinLog(m.GetIndex()) {
			return dropPastLog // an ack for entries this leader never sent
		}
		return ""
	case pb.MsgTimeoutNow:
		// Only the leader hands leadership over, in its own term.
		if l := c.leader.Load(); l == 0 || from != l || m.GetTerm() != c.term.Load() {
			return dropNotLeader
		}
		return ""
	default:
		// MsgHup, MsgBeat, MsgUnreachable, MsgSnapStatus, MsgCheckQuorum,
		// the storage messages and MsgForgetLeader are raft's own, local.
		// MsgTransferLeader too: this cluster transfers leadership only at
		// the leader (TransferLeader), never on a follower's word.
		return dropLocalType
	}
}

// fromLeader: in this node's current term, only the leader it knows sends
// appends, heartbeats and snapshots (two leaders in one term cannot exist).
// A higher term is raft's business: that is how a new leader announces
// itself.
func (c *Replica) fromLeader(m *pb.Message) string {
	if m.GetTerm() == c.term.Load() {
		if l := c.leader.Load(); l != 0 && l != m.GetFrom() {
			return dropNotLeader
		}
	}
	return ""
}

// entriesFollow checks that an append's entries continue its index and
// never go back in term or past the message's own term.
func entriesFollow(m *pb.Message) bool {
	if m.GetLogTerm() > m.GetTerm() {
		return false
	}
	prevTerm := m.GetLogTerm()
	for i, e := range m.GetEntries() {
		if e.GetIndex() != m.GetIndex()+1+uint64(i) || e.GetTerm() < prevTerm || e.GetTerm() > m.GetTerm() {
			return false
		}
		prevTerm = e.GetTerm()
	}
	return true
}

// withinLog reports whether index is in this node's log: handed out by
// raft in a Ready (a leader sends appends while it writes them, so an
// acknowledgement can arrive first), or written to its store (after a
// restart, before the first Ready). The store is asked only past the first.
func (c *Replica) withinLog(index uint64) bool {
	if index <= c.readyLast.Load() {
		return true
	}
	last, err := c.store.LastIndex()
	return err == nil && index <= last
}

// dropLog says when to log a peer's drops: once a minute per peer and
// reason (every drop is counted in the metric).
type dropLog struct{ transport.LogThrottle }

func (d *dropLog) due(from uint64, reason string, now time.Time) bool {
	return d.Due(strconv.FormatUint(from, 10)+"\x00"+reason, now)
}
