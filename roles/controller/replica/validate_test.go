package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/raftlog"
)

// Each rule of validate, one row each: removing a check fails its row.
// Node 1 is the receiver, at term 5 with leader 2 and 10 entries; 3 is a
// follower and 4 a learner; 9 is no member.
func TestValidate_DropsWhatAPeerMayNotSend(t *testing.T) {
	store, err := raftlog.Open(raftlog.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	c := &Replica{cfg: Config{NodeID: 1}, store: store}
	c.setConfState(&pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}})
	c.term.Store(5)
	c.leader.Store(2)
	c.readyLast.Store(10)

	u := func(v uint64) *uint64 { return &v }
	put := (&metadata.Command{Op: metadata.OpPut, ID: 7, Key: "k", Value: []byte("v")}).Marshal()
	msg := func(t pb.MessageType, from, term uint64, edit ...func(*pb.Message)) *pb.Message {
		m := &pb.Message{Type: &t, From: u(from), To: u(1), Term: u(term)}
		for _, e := range edit {
			e(m)
		}
		return m
	}
	ents := func(ee ...*pb.Entry) func(*pb.Message) { return func(m *pb.Message) { m.Entries = ee } }
	entry := func(index, term uint64, data []byte) *pb.Entry {
		return &pb.Entry{Index: u(index), Term: u(term), Data: data}
	}
	snap := func(index uint64, voters ...uint64) func(*pb.Message) {
		return func(m *pb.Message) {
			m.Snapshot = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: u(index), Term: u(5),
				ConfState: &pb.ConfState{Voters: voters}}}
		}
	}
	cases := []struct {
		name string
		m    *pb.Message
		want string
	}{
		{"append from the leader", msg(pb.MsgApp, 2, 5, func(m *pb.Message) { m.Index, m.LogTerm = u(10), u(5) },
			ents(entry(11, 5, nil), entry(12, 5, nil))), ""},
		{"a vote from a follower", msg(pb.MsgVote, 3, 6), ""},
		{"a learner's ack within the log", msg(pb.MsgAppResp, 4, 5, func(m *pb.Message) { m.Index = u(10) }), ""},
		{"a forwarded put", msg(pb.MsgProp, 3, 0, ents(entry(0, 0, put))), ""},
		{"a read request", msg(pb.MsgReadIndex, 3, 0, ents(entry(0, 0, []byte("ctx")))), ""},
		{"a snapshot from the leader", msg(pb.MsgSnap, 2, 5, snap(9, 1, 2, 3)), ""},
		{"a heartbeat from the leader", msg(pb.MsgHeartbeat, 2, 5, func(m *pb.Message) { m.Commit = u(10) }), ""},
		{"leadership handed over by the leader", msg(pb.MsgTimeoutNow, 2, 5), ""},

		{"not a member", msg(pb.MsgVote, 9, 6), dropNotMember},
		{"from itself", msg(pb.MsgVote, 1, 6), dropNotMember},
		{"to someone else", msg(pb.MsgVote, 3, 6, func(m *pb.Message) { m.To = u(3) }), dropNotMember},
		{"raft's own type", msg(pb.MsgHup, 3, 5), dropLocalType},
		{"a transfer request from a follower", msg(pb.MsgTransferLeader, 3, 5), dropLocalType},
		{"no term", msg(pb.MsgApp, 2, 0), dropLocalType},
		{"an empty proposal", msg(pb.MsgProp, 3, 0), dropBadEntries},
		{"a proposal with a term", msg(pb.MsgProp, 3, 5, ents(entry(0, 0, put))), dropBadEntries},
		{"a forwarded configuration change", msg(pb.MsgProp, 3, 0, ents(&pb.Entry{
			Type: pb.EntryConfChange.Enum(), Data: []byte{}})), dropBadEntries},
		{"a proposal no replica can apply", msg(pb.MsgProp, 3, 0, ents(entry(0, 0, []byte{99, 1, 2}))), dropBadCommand},
		{"a read request without its context", msg(pb.MsgReadIndex, 3, 0), dropBadEntries},
		{"entries that skip", msg(pb.MsgApp, 2, 5, func(m *pb.Message) { m.Index, m.LogTerm = u(10), u(5) },
			ents(entry(11, 5, nil), entry(13, 5, nil))), dropBadEntries},
		{"entries that go back in term", msg(pb.MsgApp, 2, 5, func(m *pb.Message) { m.Index, m.LogTerm = u(10), u(5) },
			ents(entry(11, 4, nil))), dropBadEntries},
		{"entries past the message's term", msg(pb.MsgApp, 2, 5, func(m *pb.Message) { m.Index, m.LogTerm = u(10), u(5) },
			ents(entry(11, 6, nil))), dropBadEntries},
		{"an empty snapshot", msg(pb.MsgSnap, 2, 6, func(m *pb.Message) { m.Snapshot = &pb.Snapshot{} }), dropEmptySnapshot},
		{"a snapshot without voters", msg(pb.MsgSnap, 2, 6, snap(9)), dropEmptySnapshot},
		{"a heartbeat committing past the log", msg(pb.MsgHeartbeat, 2, 5, func(m *pb.Message) { m.Commit = u(11) }), dropPastLog},
		{"an ack past the log", msg(pb.MsgAppResp, 3, 5, func(m *pb.Message) { m.Index = u(11) }), dropPastLog},
		{"an append from a follower in the leader's term", msg(pb.MsgApp, 3, 5, func(m *pb.Message) { m.Index, m.LogTerm = u(10), u(5) }), dropNotLeader},
		{"a heartbeat from a follower in the leader's term", msg(pb.MsgHeartbeat, 3, 5), dropNotLeader},
		{"leadership handed over by a follower", msg(pb.MsgTimeoutNow, 3, 5), dropNotLeader},
		{"leadership handed over in another term", msg(pb.MsgTimeoutNow, 2, 4), dropNotLeader},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, c.validate(tc.m), tc.name)
	}

	// A node that knows no configuration yet (joining) takes the leader's
	// messages from anyone authenticated.
	joining := &Replica{cfg: Config{NodeID: 1}, store: store}
	joining.setConfState(&pb.ConfState{})
	require.Empty(t, joining.validate(msg(pb.MsgHeartbeat, 9, 5)))
}

// Drops are logged once a minute per peer and reason, whatever their rate.
func TestDropLog_OncePerMinutePerPeerAndReason(t *testing.T) {
	var d dropLog
	t0 := time.Now()
	require.True(t, d.due(3, dropPastLog, t0))
	require.False(t, d.due(3, dropPastLog, t0.Add(59*time.Second)))
	require.True(t, d.due(3, dropNotLeader, t0), "another reason")
	require.True(t, d.due(4, dropPastLog, t0), "another peer")
	require.True(t, d.due(3, dropPastLog, t0.Add(time.Minute)))
	for id := range uint64(2000) { // a flood of ids stays bounded
		d.due(100+id, dropPastLog, t0)
	}
	require.LessOrEqual(t, d.Len(), 1025)
}
