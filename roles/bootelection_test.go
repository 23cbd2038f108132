package roles

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
)

// waitSameApplied waits until every controller of wc applied the same
// index, so that no log is longer than another's.
func waitSameApplied(t *testing.T, wc *testcluster.Cluster) {
	t.Helper()
	require.Eventually(t, func() bool {
		var idx uint64
		for i, id := range wc.IDs() {
			a := wc.Node(id).State().AppliedIndex()
			if i > 0 && a != idx {
				return false
			}
			idx = a
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
}

// snapshottedSlowElections is slowElections with a snapshot after every
// entry or so: a controller restarting from a snapshot knows its voters
// at once, as one holding a real state does. Without one (a young
// cluster) it learns them only once its log is applied, and on a starved
// machine raft's own timer (2-9 ticks after the start) could elect node 1
// first, without the boot campaign this test is about.
func snapshottedSlowElections(c *controller.Config) {
	slowElections(c)
	c.SnapshotEvery = 1
}

// A cluster restarted as a whole is led by its lowest-id voter, elected
// at its first campaign (replica's electAtBoot): the term moves by one,
// no split vote. By raft's randomized timers alone each of the three
// would win a round about as often, and node 1 five rounds of five once
// in 243.
func TestController_WholeClusterRestartElectsTheLowestIDAtOnce(t *testing.T) {
	wc := testcluster.New(t, 3, snapshottedSlowElections)
	for round := range 5 {
		lead := wc.Leader().NodeID()
		_, err := wc.Put(lead, fmt.Sprintf("k%d", round), "v")
		require.NoError(t, err)
		waitSameApplied(t, wc)
		term := wc.Node(lead).Term()
		// The leader last: stopped first, it would be succeeded at once
		// (leaderdeath.go), and node 1 might be left with a shorter log.
		for _, id := range wc.Others(lead) {
			wc.StopController(id)
		}
		wc.StopController(lead)
		for _, id := range wc.IDs() {
			wc.StartController(id)
		}
		require.Equal(t, uint64(1), wc.WaitLeader(wc.IDs()...), "round %d", round)
		require.Equal(t, term+1, wc.Node(1).Term(), "round %d: more than one election", round)
		require.GreaterOrEqual(t, testcluster.Metric(t, wc.Node(1).Registry(), "corral_raft_boot_campaigns_total"), 1.0)
		for _, id := range wc.Others(1) {
			require.Zero(t, testcluster.Metric(t, wc.Node(id).Registry(), "corral_raft_boot_campaigns_total"),
				"controller %d campaigned at boot", id)
		}
	}
}

// The lowest-id voter restarted alone into a running cluster campaigns
// at boot while it has not heard from the leader (its messages are held
// here), and nothing moves: the others hear from their leader and ignore
// its pre-votes, and once the leader's messages arrive it follows.
func TestController_LowestIDRestartedAloneDisruptsNothing(t *testing.T) {
	wc := testcluster.New(t, 3, slowElections)
	wc.StopController(1) // if it led, its successor is elected at once (leaderdeath.go)
	lead := wc.WaitLeader(2, 3)
	term := wc.Node(lead).Term()
	wc.Net.Hold(func(from uint64, m *raftpb.Message) bool { return from == lead && m.GetTo() == 1 })
	wc.StartController(1)
	require.Eventually(t, func() bool {
		return testcluster.Metric(t, wc.Node(1).Registry(), "corral_raft_boot_campaigns_total") >= 3
	}, 10*time.Second, 5*time.Millisecond, "no boot campaign")
	wc.Net.ReleaseHeld()
	require.Equal(t, lead, wc.WaitLeader(wc.IDs()...))
	require.Never(t, func() bool {
		for _, id := range wc.IDs() {
			// nil once the test is over: Never may run a last check late
			if n := wc.Node(id); n != nil && (n.Term() != term || n.LeaderID() != lead) {
				return true
			}
		}
		return false
	}, time.Second, 10*time.Millisecond, "a restarted member's boot campaign changed the term or the leader")
}
