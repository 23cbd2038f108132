package roles

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
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
// 10 s, election timeout 7 ticks of 100 ms. A worker's self-fence margin
// (0.6 x the timeout) must cover detection + election + discovery +
// resuming at the new leader; with the old 5 s default it did not. The leader is cut
// off (as by kill -9, SIGSTOP or a partition: it just goes silent) five
// times in a row; no worker may fence itself or be fenced, and no epoch
// may change.
func TestWorker_RepeatedLeaderLossFencesNoWorkerAtProductionRatios(t *testing.T) {
	// The defaults, scaled down five times (testcluster ticks every 20 ms
	// where a controller ticks every 100 ms, the same number of ticks an
	// election timeout in both).
	const heartbeat, sessionTimeout = worker.DefaultHeartbeatInterval / 5, transport.DefaultSessionTimeout / 5
	wc := testcluster.New(t, 3, func(c *controller.Config) { c.SessionTimeout = sessionTimeout })
	wc.Net.SetStreamBackoff(true) // connections that crossed a partition recover as QUIC's do
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

// failoverSeeds is how many seeds the random failover test runs: a few by
// default, as many as wanted with CORRAL_FAILOVER_SEEDS=N.
func failoverSeeds(t *testing.T) int {
	if s := os.Getenv("CORRAL_FAILOVER_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "CORRAL_FAILOVER_SEEDS must be a number")
		return n
	}
	return 4
}

// The same claim as above, under a seeded random schedule on a lossy
// network: raft messages are lost (2 %) and delayed (1-8 ms, so
// reordered), the fault lands at a random phase of the heartbeat cycle,
// and each round the leader either goes silent for a random time and comes
// back (a pause or a partition) or is killed (cut off first, so it says
// goodbye to no one, then closed) and restarted from its data dir; a third
// of the kills are heard of at once, as the liveness link reports a dead
// process, and the survivors elect without waiting out a timeout. No
// worker may fence itself or be fenced, and no epoch may change. A failing
// seed reruns alone: go test ./roles -run 'RandomLeaderFailures/seed=N'.
func TestWorker_RandomLeaderFailuresUnderLossFenceNoWorker(t *testing.T) {
	const heartbeat, sessionTimeout = worker.DefaultHeartbeatInterval / 5, transport.DefaultSessionTimeout / 5
	for seed := range int64(failoverSeeds(t)) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 16))
			wc := testcluster.NewSeeded(t, 3, seed, func(c *controller.Config) { c.SessionTimeout = sessionTimeout })
			wc.Net.SetDropRate(0.02)
			wc.Net.SetDelay(time.Millisecond, 8*time.Millisecond)
			wc.Net.SetStreamBackoff(true) // connections that crossed a partition recover as QUIC's do
			tweak := func(c *worker.Config) { c.HeartbeatInterval = heartbeat }
			ws := []*testcluster.Worker{wc.StartWorker("", tweak), wc.StartWorker("", tweak), wc.StartWorker("", tweak)}
			wc.WaitAlive(ws...)
			for round := range 3 {
				lead := wc.Leader().NodeID()
				// Land the fault at a random point of the heartbeat cycle;
				// the waits here are the schedule, not waits for a condition.
				time.Sleep(time.Duration(rng.Int64N(int64(heartbeat))))
				fault := rng.IntN(3)
				kill := fault > 0
				wc.Net.Isolate(lead)
				if kill {
					wc.StopController(lead)
				}
				if fault == 2 {
					// A crash the others hear of (the liveness link:
					// its sockets close), so they elect at once.
					wc.Net.Heal()
					wc.Net.ReportGone(lead)
				}
				newLead := wc.WaitLeader(wc.Others(lead)...)
				// A controller restarted in an earlier round may win and
				// hand the leadership on (roles/controller/handoff.go):
				// the workers follow whoever leads now.
				leading := func() string {
					if id := wc.Node(newLead).LeaderID(); id != 0 {
						return wc.Addr(id)
					}
					return ""
				}
				for _, w := range ws {
					require.Eventually(t, func() bool { st := w.Status(); return st.Alive && st.Leader == leading() },
						5*time.Second, 5*time.Millisecond, "round %d (kill=%v): worker %s did not move to leader %d: %s",
						round, kill, w.ID(), newLead, anyFenced(t, ws))
				}
				time.Sleep(time.Duration(rng.Int64N(int64(sessionTimeout / 2))))
				wc.Net.Heal()
				if kill {
					wc.StartController(lead)
				}
				wc.WaitLeader(wc.IDs()...)
				require.Empty(t, anyFenced(t, ws), "round %d (kill=%v)", round, kill)
			}
			// Nothing fences late either: a whole session timeout more.
			require.Never(t, func() bool { return anyFenced(t, ws) != "" }, sessionTimeout, 10*time.Millisecond,
				"%s", anyFenced(t, ws))
			for _, w := range ws {
				require.Equal(t, uint64(1), w.Status().Epoch, "worker %s changed epoch", w.ID())
				require.Zero(t, testcluster.Metric(t, w.Registry(), "corral_worker_self_fencings_total"), w.ID())
				require.Zero(t, testcluster.Metric(t, w.Registry(), "corral_worker_fenced_by_controller_total"), w.ID())
			}
		})
	}
}

// A live worker keeps an idle connection to every controller besides its
// leader, so a failover costs it no handshake: it asks a standby who leads
// and resumes on the new leader's standby. At scale this is what keeps a
// failover from turning into thousands of handshakes in the same second.
func TestWorker_FailoverResumesOnStandbyConnectionsWithoutANewHandshake(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	ws := []*testcluster.Worker{wc.StartWorker("", nil), wc.StartWorker("", nil), wc.StartWorker("", nil)}
	wc.WaitAlive(ws...)
	dials := map[string]float64{}
	for _, w := range ws {
		require.Eventually(t, func() bool {
			return testcluster.Metric(t, w.Registry(), "corral_worker_standby_connections") == 2
		}, 10*time.Second, 5*time.Millisecond, "worker %s never opened its standby connections", w.ID())
		dials[w.ID()] = testcluster.Metric(t, w.Registry(), "corral_worker_connections_total")
	}
	old := wc.Leader().NodeID()
	wc.Net.Isolate(old)
	addr := wc.Addr(wc.WaitLeader(wc.Others(old)...))
	for _, w := range ws {
		require.Eventually(t, func() bool { st := w.Status(); return st.Alive && st.Leader == addr },
			5*time.Second, 5*time.Millisecond, "worker %s did not move to the new leader", w.ID())
		require.Equal(t, dials[w.ID()], testcluster.Metric(t, w.Registry(), "corral_worker_connections_total"),
			"worker %s dialed during the failover", w.ID())
		require.Equal(t, uint64(1), w.Status().Epoch)
	}
	require.Empty(t, anyFenced(t, ws))
}

// A new leader beckons the workers on their standby streams
// (roles/controller/sessions/beckon.go): each pings it at once and moves
// its session there, before it could find its old leader silent (0.75 of
// its 1 s heartbeat interval after an unanswered heartbeat; the election
// here takes 140-280 ms).
func TestWorker_NewLeaderBeckonsTheWorkersOnTheirStandbys(t *testing.T) {
	const sessionTimeout = 4 * time.Second
	wc := testcluster.New(t, 3, func(c *controller.Config) { c.SessionTimeout = sessionTimeout })
	tweak := func(c *worker.Config) { c.HeartbeatInterval = time.Second }
	ws := []*testcluster.Worker{wc.StartWorker("", tweak), wc.StartWorker("", tweak), wc.StartWorker("", tweak)}
	wc.WaitAlive(ws...)
	for _, w := range ws {
		require.Eventually(t, func() bool {
			return testcluster.Metric(t, w.Registry(), "corral_worker_standby_connections") == 2
		}, 30*time.Second, 5*time.Millisecond, "worker %s never opened its standby connections", w.ID())
	}
	for round := range 2 {
		old := wc.Leader().NodeID()
		before := map[string]float64{}
		for _, w := range ws {
			before[w.ID()] = testcluster.Metric(t, w.Registry(), "corral_worker_beckons_total")
		}
		wc.Net.Isolate(old)
		lead := wc.WaitLeader(wc.Others(old)...)
		addr := wc.Addr(lead)
		for _, w := range ws {
			require.Eventually(t, func() bool { st := w.Status(); return st.Alive && st.Leader == addr },
				5*time.Second, 5*time.Millisecond, "round %d: worker %s did not move to the new leader", round, w.ID())
			require.Greater(t, testcluster.Metric(t, w.Registry(), "corral_worker_beckons_total"), before[w.ID()],
				"round %d: worker %s moved without the new leader's beckon", round, w.ID())
		}
		require.GreaterOrEqual(t, testcluster.Metric(t, wc.Node(lead).Registry(), "corral_workers_beckons_total"), 3.0)
		wc.Net.Heal()
		wc.WaitLeader(wc.IDs()...)
		// Standbys to the healed controller come back within [T/2, 2T].
		for _, w := range ws {
			require.Eventually(t, func() bool {
				return testcluster.Metric(t, w.Registry(), "corral_worker_standby_connections") == 2
			}, 30*time.Second, 5*time.Millisecond, "worker %s lost a standby for good", w.ID())
		}
	}
	require.Empty(t, anyFenced(t, ws))
	for _, w := range ws {
		require.Equal(t, uint64(1), w.Status().Epoch)
	}
}
