package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// hostileMessages builds messages an authenticated but hostile member
// `from` could send to `to`: the shapes that used to crash or mislead raft
// (an empty snapshot, an acknowledgement past the log, a heartbeat committing
// past the log, leadership handed over by a follower, raft's local message
// types, appends whose entries do not follow on) and random messages with
// random fields in terms up to the current one.
func hostileMessages(rng *rand.Rand, from, to, term, last uint64) []*pb.Message {
	u := func(v uint64) *uint64 { return &v }
	typ := func(t pb.MessageType) *pb.MessageType { return &t }
	msg := func(t pb.MessageType, term uint64) *pb.Message {
		return &pb.Message{Type: typ(t), From: u(from), To: u(to), Term: u(term)}
	}
	var out []*pb.Message
	for _, tm := range []uint64{term, term + 1} {
		m := msg(pb.MsgSnap, tm)
		m.Snapshot = &pb.Snapshot{}
		out = append(out, m)
		m = msg(pb.MsgAppResp, tm)
		m.Index = u(last + 1000)
		out = append(out, m)
		m = msg(pb.MsgHeartbeat, tm)
		m.Commit = u(last + 1000)
		out = append(out, m)
		m = msg(pb.MsgApp, tm)
		m.Index, m.LogTerm = u(last), u(tm)
		m.Entries = []*pb.Entry{{Index: u(last + 5), Term: u(tm)}, {Index: u(last + 2), Term: u(tm)}}
		out = append(out, m)
	}
	for _, t := range []pb.MessageType{pb.MsgTimeoutNow, pb.MsgTransferLeader, pb.MsgHup, pb.MsgBeat,
		pb.MsgCheckQuorum, pb.MsgUnreachable, pb.MsgSnapStatus, pb.MsgStorageAppend, pb.MsgStorageApply,
		pb.MsgForgetLeader} {
		out = append(out, msg(t, term))
	}
	for range 200 {
		m := msg(pb.MessageType(rng.IntN(24)), rng.Uint64N(term+1))
		m.Index, m.LogTerm, m.Commit = u(rng.Uint64N(last+50)), u(rng.Uint64N(term+1)), u(rng.Uint64N(last+50))
		m.Reject, m.RejectHint = func() *bool { b := rng.IntN(2) == 0; return &b }(), u(rng.Uint64N(last+50))
		for i := range rng.IntN(3) {
			m.Entries = append(m.Entries, &pb.Entry{Index: u(m.GetIndex() + 1 + uint64(i)), Term: u(m.GetTerm()),
				Data: []byte("hostile")})
		}
		if rng.IntN(4) == 0 {
			m.Snapshot = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: u(rng.Uint64N(last + 50)),
				Term: u(rng.Uint64N(term + 1))}}
		}
		out = append(out, m)
	}
	return out
}

// A controller whose certificate is valid but which sends messages it may
// not send must not crash anyone nor split the replicas: every node steps
// all of the hostile messages above, over several seeds; then writes go on
// and every node holds the same data.
func TestHostileRaftMessagesFromAnAuthenticatedPeerCrashNoNode(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			mc := newMemCluster(t, 3, nil)
			lead := mc.waitLeader(mc.ids()...)
			for i := range 20 {
				_, err := mc.put(lead, fmt.Sprintf("before-%02d", i), "v")
				require.NoError(t, err)
			}
			// The attacker holds a valid controller certificate: controller
			// 4, a learner that never runs. What it says about its own log
			// only concerns itself (a learner counts in no quorum); raft
			// cannot survive a voter that lies about its own log, and the
			// transport makes sure nobody speaks for another node.
			require.NoError(t, mc.node(lead).AddController(context.Background(), 4, "mem:4"))
			const from = 4
			for _, to := range mc.ids() {
				r := mc.node(to).r
				require.Eventually(t, func() bool { _, l := r.Members(); return l[from] }, 10*time.Second, time.Millisecond)
				st := r.Status()
				for _, m := range hostileMessages(rng, from, to, st.GetTerm(), st.GetCommit()) {
					_ = r.Process(context.Background(), m)
				}
			}
			lead = mc.waitLeader(mc.ids()...)
			for i := range 20 {
				_, err := mc.put(lead, fmt.Sprintf("after-%02d", i), "v")
				require.NoError(t, err)
			}
			want := mc.node(lead).State().Range("", 1000)
			for _, id := range mc.ids() {
				require.Eventually(t, func() bool {
					got := mc.node(id).State().Range("", 1000)
					return fmt.Sprint(got) == fmt.Sprint(want)
				}, 10*time.Second, 10*time.Millisecond, "node %d diverged", id)
			}
			require.Len(t, want, 40)
			require.Positive(t, droppedTotal(t, mc.node(lead).Registry()), "nothing was dropped")
		})
	}
}

func droppedTotal(t *testing.T, g prometheus.Gatherer) float64 {
	return counterSum(t, g, "corral_raft_messages_dropped_total")
}

// counterSum adds up every series of the counter name in g.
func counterSum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	mfs, err := g.Gather()
	require.NoError(t, err)
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
