package roles

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
)

func TestWorker_LeaderFailoverFencesNoLiveWorkerButFencesOneKilledDuringIt(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	var live []*testcluster.Worker
	for range 4 {
		live = append(live, wc.StartWorker("", nil))
	}
	doomed := wc.StartWorker("", nil)
	wc.WaitAlive(append(live, doomed)...)
	old := wc.Leader()
	oldID := old.NodeID()

	// The leader vanishes (no goodbye, like kill -9) and a worker dies
	// while the controllers elect a successor.
	wc.Net.Isolate(oldID)
	doomed.Halt()
	rest := wc.Others(oldID)
	lead := wc.Node(wc.WaitLeader(rest...))
	leadAddr := wc.Addr(lead.NodeID())
	t.Logf("leader %d -> %d", oldID, lead.NodeID())

	for _, w := range live {
		require.Eventually(t, func() bool { st := w.Status(); return st.Alive && st.Leader == leadAddr },
			5*time.Second, 5*time.Millisecond, "worker %s did not move to the new leader", w.ID())
	}
	// The killed worker is fenced, but only after a full session timeout
	// counted from the moment the new leader took over.
	require.Eventually(t, func() bool { return replicated(lead, doomed.ID()).State == metadata.WorkerFenced },
		5*time.Second, 5*time.Millisecond)
	since := lead.SessionsSince()
	fencedAt := time.UnixMilli(replicated(lead, doomed.ID()).StateChangedAtMS)
	require.GreaterOrEqual(t, fencedAt.Sub(since), testcluster.SessionTimeout-time.Millisecond,
		"the new leader fenced before giving the worker a full session timeout")

	// Nobody alive was fenced by the failover, on either side, for a while.
	require.Never(t, func() bool {
		for _, w := range live {
			if !w.Status().Alive || len(w.FencedTimes()) > 0 {
				return true
			}
		}
		return false
	}, 2*testcluster.SessionTimeout, 10*time.Millisecond)
	for _, w := range live {
		got := replicated(lead, w.ID())
		require.Equal(t, metadata.WorkerAlive, got.State, w.ID())
		require.Equal(t, uint64(1), got.Epoch, "worker %s re-registered during the failover", w.ID())
		require.Equal(t, uint64(1), w.Status().Epoch)
		require.Greater(t, w.Status().ControllerEpoch, old.Term()-1)
	}
	waitFencings(t, lead, 1)
	wc.Net.Heal()
}

func TestWorker_FollowsLeadershipTransferQuickly(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	ws := []*testcluster.Worker{wc.StartWorker("", nil), wc.StartWorker("", nil), wc.StartWorker("", nil)}
	wc.WaitAlive(ws...)
	old := wc.Leader()
	target := wc.Others(old.NodeID())[0]
	require.NoError(t, old.TransferLeader(context.Background(), target))
	lead := wc.Node(wc.WaitLeader(wc.IDs()...))
	require.Equal(t, target, lead.NodeID())
	moved := time.Now()
	addr := wc.Addr(target)
	for _, w := range ws {
		require.Eventually(t, func() bool { return w.Status().Leader == addr }, 5*time.Second, time.Millisecond)
	}
	// A worker learns at its next heartbeat (at most one interval) and
	// moves at once; allow scheduling slack on a loaded test machine.
	took := time.Since(moved)
	t.Logf("all workers on the new leader %s after it was elected", took)
	require.Less(t, took, 2*testcluster.Heartbeat+500*time.Millisecond)
	for _, w := range ws {
		require.Equal(t, uint64(1), w.Status().Epoch)
		require.Empty(t, w.FencedTimes())
	}
}

func TestWorker_CutOffWorkerFencesItselfBeforeTheController(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	w := wc.StartWorker("", nil)
	bystander := wc.StartWorker("", nil)
	wc.WaitAlive(w, bystander)
	lead := wc.Leader()

	cut := time.Now()
	wc.Net.Isolate(w.NetID) // cut off from every controller
	var controllerFencedAt time.Time
	require.Eventually(t, func() bool {
		if replicated(lead, w.ID()).State == metadata.WorkerFenced {
			controllerFencedAt = time.Now()
			return true
		}
		return false
	}, 5*time.Second, time.Millisecond)
	fenced := w.FencedTimes()
	require.Len(t, fenced, 1, "the cut-off worker did not fence itself")
	selfAt := fenced[0]
	t.Logf("self-fenced %s after the cut, controller fenced %s after it", selfAt.Sub(cut), controllerFencedAt.Sub(cut))
	require.True(t, selfAt.Before(controllerFencedAt), "the controller fenced the worker before it fenced itself")
	require.Less(t, selfAt.Sub(cut), testcluster.SessionTimeout, "self-fence came later than the session timeout")
	require.Equal(t, 1.0, testcluster.Metric(t, w.Registry(), "corral_worker_self_fencings_total"))
	require.False(t, w.Status().Alive)

	// Back on the network, it registers again with a higher epoch.
	wc.Net.Heal()
	wc.WaitAlive(w)
	require.Equal(t, uint64(2), w.Status().Epoch)
	require.Empty(t, bystander.FencedTimes())
	require.Equal(t, uint64(1), bystander.Status().Epoch)
}

func TestWorker_SlowApplyPathDoesNotFenceLiveWorkers(t *testing.T) {
	var (
		blocked atomic.Bool
		release = make(chan struct{})
	)
	wc := testcluster.New(t, 1, func(c *controller.Config) {
		c.RequestTimeout = 10 * testcluster.SessionTimeout
		c.ApplyHook = func() {
			if blocked.Load() {
				<-release
			}
		}
	})
	ws := []*testcluster.Worker{wc.StartWorker("", nil), wc.StartWorker("", nil), wc.StartWorker("", nil)}
	wc.WaitAlive(ws...)
	lead := wc.Leader()
	acked := func() float64 {
		var n float64
		for _, w := range ws {
			n += testcluster.Metric(t, w.Registry(), "corral_worker_heartbeats_acked_total")
		}
		return n
	}

	// Block apply: the next committed entry parks the raft loop. Meanwhile
	// hammer the API and the proposal path.
	blocked.Store(true)
	var wg sync.WaitGroup
	stopLoad := make(chan struct{})
	wg.Go(func() {
		_, err := wc.Put(lead.NodeID(), "slow", "apply")
		require.NoError(t, err)
	})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				rec := httptest.NewRecorder()
				lead.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/workers", nil))
			}
		})
	}
	before := acked()
	require.Never(t, func() bool {
		for _, w := range ws {
			if !w.Status().Alive || len(w.FencedTimes()) > 0 {
				return true
			}
		}
		return fencings(t, lead) > 0
	}, 3*testcluster.SessionTimeout, 10*time.Millisecond, "a live worker was fenced while apply was blocked")
	during := acked() - before
	close(stopLoad)
	blocked.Store(false)
	close(release)
	wg.Wait()
	// Heartbeats kept being answered all along: about one per interval per
	// worker (allow for a loaded machine).
	want := float64(len(ws)) * float64(3*testcluster.SessionTimeout/testcluster.Heartbeat) / 2
	require.Greater(t, during, want, "heartbeats were not acknowledged while apply was blocked")
	require.Never(t, func() bool { return fencings(t, lead) > 0 }, testcluster.SessionTimeout, 10*time.Millisecond)
	for _, w := range ws {
		require.Equal(t, uint64(1), w.Status().Epoch)
		require.Empty(t, w.FencedTimes())
	}
}

func TestWorker_ManyWorkersOneLeader(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	var ws []*testcluster.Worker
	for range 30 {
		ws = append(ws, wc.StartWorker("", nil))
	}
	wc.WaitAlive(ws...)
	lead := wc.Leader()
	require.Eventually(t, func() bool { return lead.WorkerCounts(time.Now())["alive"] == 30 }, 5*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool { return fencings(t, lead) > 0 }, testcluster.SessionTimeout, 20*time.Millisecond)
	for _, id := range wc.IDs() {
		if id == lead.NodeID() {
			continue
		}
		view := getWorkers(t, wc.Node(id))
		require.Len(t, view.Workers, 30, fmt.Sprintf("follower %d", id))
	}
}

// A registration that outlives the request timeout is answered
// "commit_failed" although it may still commit, and the worker asks again.
// Once it has committed, the leader must answer with that epoch: a new one
// would lose everything the first was given, for a worker nobody fenced
// (a loaded CI machine showed epoch 2 this way).
func TestWorker_RegistrationAskedAgainKeepsItsEpoch(t *testing.T) {
	var blocked atomic.Bool
	release := make(chan struct{})
	wc := testcluster.New(t, 1, func(c *controller.Config) {
		c.RequestTimeout = 300 * time.Millisecond
		c.ApplyHook = func() {
			if blocked.Load() {
				<-release
			}
		}
	})
	var once sync.Once
	unblock := func() { blocked.Store(false); once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the cluster's own cleanup, which waits for apply
	wc.WaitLeader(wc.IDs()...)
	lead := wc.Leader()
	commitFailed := func() float64 {
		return testcluster.Metric(t, lead.Registry(), "corral_workers_registrations_refused_total", "commit_failed")
	}
	// A first worker shows that the leader takes registrations.
	wc.WaitAlive(wc.StartWorker("", nil))
	blocked.Store(true)
	w := wc.StartWorker("", nil)
	require.Eventually(t, func() bool { return commitFailed() > 0 }, 10*time.Second, 5*time.Millisecond)
	unblock()
	wc.WaitAlive(w)
	require.Equal(t, uint64(1), w.Status().Epoch)
	require.Never(t, func() bool {
		got, _ := lead.State().Worker(w.ID())
		return got.Epoch != 1 || got.State != metadata.WorkerAlive || w.Status().Epoch != 1
	}, 10*testcluster.Heartbeat, 10*time.Millisecond, "the worker was registered again with a new epoch")
}
