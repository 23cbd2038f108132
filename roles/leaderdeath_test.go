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

// Elections here time out after 60 ticks of 50 ms: 3.0-6.0 s. A follower
// could not elect by its timer before 2.95 s after the leader's last
// heartbeat, so a leader elected within 2.5 s was elected on the news of
// the old one's death, not by a timeout.
const (
	slowTick          = 50 * time.Millisecond
	slowElectionTicks = 60
	beforeAnyTimeout  = 2500 * time.Millisecond
)

func slowElections(c *controller.Config) {
	c.TickInterval, c.ElectionTicks = slowTick, slowElectionTicks
	c.SessionTimeout = 10 * slowElectionTicks * slowTick // checkFailoverFits
}

// When the leader's process ends, the followers hear it from the
// transport (transport/liveness.go over QUIC; a closed in-memory transport
// here) and elect a successor at once, without waiting out their election
// timeout.
func TestController_LeaderDeathElectsWithoutWaitingForTheElectionTimeout(t *testing.T) {
	wc := testcluster.New(t, 3, slowElections)
	for round := range 3 {
		old := wc.Leader()
		oldID, oldTerm := old.NodeID(), old.Term()
		others := wc.Others(oldID)
		deaths := map[uint64]float64{}
		for _, id := range others {
			deaths[id] = testcluster.Metric(t, wc.Node(id).Registry(), "corral_raft_leader_deaths_total")
		}
		wc.StopController(oldID)
		var lead uint64
		require.Eventually(t, func() bool {
			lead = 0
			for _, id := range others {
				l := wc.Node(id).LeaderID()
				if l == 0 || l == oldID || (lead != 0 && l != lead) {
					return false
				}
				lead = l
			}
			return true
		}, beforeAnyTimeout, 5*time.Millisecond, "round %d: no successor of %d within %v", round, oldID, beforeAnyTimeout)
		n := wc.Node(lead)
		require.Greater(t, n.Term(), oldTerm)
		require.GreaterOrEqual(t, testcluster.Metric(t, n.Registry(), "corral_raft_death_campaigns_total"), 1.0, "round %d", round)
		// Every survivor heard the news; the counter moves before the
		// campaign, so it is there by now.
		for _, id := range others {
			require.Equal(t, deaths[id]+1, testcluster.Metric(t, wc.Node(id).Registry(), "corral_raft_leader_deaths_total"),
				"round %d: controller %d", round, id)
		}
		_, err := wc.Put(lead, "k", "v")
		require.NoError(t, err, "round %d", round)
		wc.StartController(oldID)
	}
}

// A report of the leader's death that reaches one follower only (a
// mistaken one, or one forged on the path) changes nothing: the other
// follower still hears from its leader and ignores the pre-vote, and the
// one that was told takes its leader back at the next heartbeat.
func TestController_ALoneMistakenDeathReportDisruptsNothing(t *testing.T) {
	wc := testcluster.New(t, 3, slowElections)
	old := wc.Leader()
	oldID, term := old.NodeID(), old.Term()
	told := wc.Others(oldID)[0]
	wc.Net.ReportGone(oldID, told)
	require.Eventually(t, func() bool {
		return testcluster.Metric(t, wc.Node(told).Registry(), "corral_raft_death_campaigns_total") >= 2
	}, 10*time.Second, 5*time.Millisecond, "the told follower never campaigned")
	// testify runs each check in a goroutine that can outlive Never and
	// the test; a node stopped by the cleanup by then is nil.
	require.Never(t, func() bool {
		for _, id := range wc.IDs() {
			if n := wc.Node(id); n != nil && (n.Term() != term || (id != told && n.LeaderID() != oldID)) {
				return true
			}
		}
		return false
	}, time.Second, 10*time.Millisecond, "a lone report changed the term or the leader")
	require.Eventually(t, func() bool { return wc.Node(told).LeaderID() == oldID }, 10*time.Second, 5*time.Millisecond)
}

// The first-ranked survivor is often the follower that lagged (the one
// outside the leader's fastest quorum), and a candidate with a shorter log
// cannot win. The follower that refuses its pre-vote for that reason
// campaigns at once instead of waiting for its rank: four ticks here are
// 2 s, and the successor must lead within 1.5 s.
func TestController_LeaderDeathTheFurtherFollowerCampaignsWhenTheFirstRankedLags(t *testing.T) {
	const tick = 500 * time.Millisecond
	wc := testcluster.New(t, 3, func(c *controller.Config) {
		c.TickInterval, c.ElectionTicks = tick, 10 // elections time out after 5-10 s
		c.SessionTimeout = 30 * time.Second
	})
	old := wc.Leader()
	oldID := old.NodeID()
	others := wc.Others(oldID)
	lagging, ahead := others[0], others[1] // ranked by id: the lagging one first
	wc.Net.Hold(func(_ uint64, m *raftpb.Message) bool {
		return m.GetTo() == lagging && m.GetType() == raftpb.MsgApp
	})
	t.Cleanup(wc.Net.ReleaseHeld)
	for i := range 5 {
		_, err := wc.Put(oldID, fmt.Sprintf("k%d", i), "v")
		require.NoError(t, err)
	}
	wc.StopController(oldID)
	require.Eventually(t, func() bool { return wc.Node(ahead).LeaderID() == ahead }, 1500*time.Millisecond, 5*time.Millisecond,
		"controller %d, further along than %d, did not lead within 1.5 s", ahead, lagging)
}
