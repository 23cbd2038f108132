package roles

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
	"github.com/corral-dev/corral/roles/worker"
	"github.com/corral-dev/corral/transport"
)

// A failover must cost healthy workers nothing. This test keeps the
// default ratios, scaled down five times: heartbeat 1 s, session timeout
// 10 s, election timeout 10 ticks of 100 ms. A worker's self-fence margin
// (0.6 x the timeout) must cover detection + election + discovery +
// resuming at the new leader; with the old 5 s default it did not. The leader is cut
// off (as by kill -9, SIGSTOP or a partition: it just goes silent) five
// times in a row; no worker may fence itself or be fenced, and no epoch
// may change.
func TestWorker_RepeatedLeaderLossFencesNoWorkerAtProductionRatios(t *testing.T) {
	// The defaults, scaled down five times (testcluster ticks every 20 ms
	// where a controller ticks every 100 ms, 10 ticks an election timeout
	// in both).
	const heartbeat, sessionTimeout = worker.DefaultHeartbeatInterval / 5, transport.DefaultSessionTimeout / 5
	wc := testcluster.New(t, 3, func(c *controller.Config) { c.SessionTimeout = sessionTimeout })
	tweak := func(c *worker.Config) { c.HeartbeatInterval = heartbeat }
	ws := []*testcluster.Worker{wc.StartWorker("", tweak), wc.StartWorker("", tweak), wc.StartWorker("", tweak)}
	wc.WaitAlive(ws...)
	for round := range 5 {
		old := wc.Leader()
		oldID := old.NodeID()
		wc.Net.Isolate(oldID)
		lead := wc.Node(wc.WaitLeader(wc.Others(oldID)...))
		addr := wc.Addr(lead.NodeID())
		for _, w := range ws {
			require.Eventually(t, func() bool { st := w.Status(); return st.Alive && st.Leader == addr },
				5*time.Second, 5*time.Millisecond, "round %d: worker %s did not move to the new leader", round, w.ID())
		}
		// Stay on the new leader past a whole session timeout, then let the
		// old one come back as a follower.
		require.Never(t, func() bool { return anyFenced(t, ws) != "" }, sessionTimeout, 10*time.Millisecond,
			"round %d: %s", round, anyFenced(t, ws))
		wc.Net.Heal()
	}
	for _, w := range ws {
		require.Equal(t, uint64(1), w.Status().Epoch, "worker %s changed epoch", w.ID())
		require.Zero(t, testcluster.Metric(t, w.Registry(), "corral_worker_self_fencings_total"), w.ID())
		require.Zero(t, testcluster.Metric(t, w.Registry(), "corral_worker_fenced_by_controller_total"), w.ID())
	}
}

// anyFenced names a worker that fenced itself or lost its session, or "".
func anyFenced(t *testing.T, ws []*testcluster.Worker) string {
	for _, w := range ws {
		if st := w.Status(); !st.Alive || len(w.FencedTimes()) > 0 || st.Epoch != 1 {
			return fmt.Sprintf("worker %s: alive=%v epoch=%d fenced at %v", w.ID(), st.Alive, st.Epoch, w.FencedTimes())
		}
	}
	return ""
}
