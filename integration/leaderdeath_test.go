package integration

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A leader killed with kill -9 is replaced without waiting out an
// election timeout: its TCP liveness sockets close with the process, each
// follower's redial is refused, and they elect a successor at once
// (transport/liveness.go, roles/controller/replica/leaderdeath.go). A
// stopped leader (SIGSTOP) keeps its sockets open: it is not dead, and
// its successor must come from the election timeout, as before.
func TestLeaderDeath_KilledLeaderIsReportedAndStoppedOneIsNot(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	lead := c.waitLeader(30 * time.Second)
	others := otherIDs(lead)
	stopped := c.nodes[lead]
	require.NoError(t, stopped.cmd.Process.Signal(syscall.SIGSTOP))
	next := c.waitLeader(30*time.Second, others...)
	for _, id := range others {
		require.Zero(t, metricValue(t, c.nodes[id], "corral_raft_leader_deaths_total"), "controller %d took a stopped leader for dead", id)
		require.Zero(t, metricValue(t, c.nodes[id], "corral_transport_peer_deaths_detected_total"), "controller %d", id)
	}
	require.NoError(t, stopped.cmd.Process.Signal(syscall.SIGCONT))
	c.waitLeader(30 * time.Second)

	lead = c.waitLeader(30 * time.Second)
	require.Equal(t, next, lead)
	others = otherIDs(lead)
	c.kill(lead)
	newLead := c.waitLeader(30*time.Second, others...)
	require.Eventually(t, func() bool {
		for _, id := range others {
			if metricValue(t, c.nodes[id], "corral_transport_peer_deaths_detected_total") < 1 ||
				metricValue(t, c.nodes[id], "corral_raft_leader_deaths_total") < 1 {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "a follower never heard that leader %d died", lead)
	require.GreaterOrEqual(t, metricValue(t, c.nodes[newLead], "corral_raft_death_campaigns_total"), 1.0,
		"the new leader %d was not elected on the news of the death", newLead)
}

// otherIDs is every controller of a 3-node cluster but id.
func otherIDs(id uint64) []uint64 {
	var ids []uint64
	for i := uint64(1); i <= 3; i++ {
		if i != id {
			ids = append(ids, i)
		}
	}
	return ids
}
