package roles

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/internal/testcluster"
)

// The leader times its rounds of heartbeats and every controller the
// ticks its raft loop takes (tickdelay.go); a follower sends no rounds,
// so it records none.
func TestController_LeaderTimesItsHeartbeatsAndEveryLoopItsTicks(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	lead := wc.WaitLeader(wc.IDs()...)
	beats := func(id uint64) float64 {
		return testcluster.Metric(t, wc.Node(id).Registry(), "corral_raft_heartbeat_interval_seconds")
	}
	require.Eventually(t, func() bool { return beats(lead) >= 5 }, 10*time.Second, 10*time.Millisecond)
	for _, id := range wc.IDs() {
		require.Eventually(t, func() bool {
			return testcluster.Metric(t, wc.Node(id).Registry(), "corral_raft_tick_delay_seconds") >= 5
		}, 10*time.Second, 10*time.Millisecond, "controller %d", id)
		if id != lead && wc.Leader().NodeID() == lead {
			require.Zero(t, beats(id), "follower %d", id)
		}
	}
}
