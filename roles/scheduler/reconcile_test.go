package scheduler

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

func schedJob(typ string, count int, singleton bool, version uint64, allocs ...metadata.Allocation) *metadata.SchedJob {
	spec := metadata.JobSpec{Name: "j", Type: typ, Count: count, Singleton: singleton, Task: metadata.Task{Command: "x"}}
	spec.Defaults()
	return &metadata.SchedJob{Job: metadata.Job{Name: "j", Spec: spec, Version: version}, Allocs: allocs}
}

func alloc(id, worker string, version uint64, st metadata.AllocState, desired string) metadata.Allocation {
	return metadata.Allocation{ID: id, Job: "j", JobVersion: version, Worker: worker, State: st, Desired: desired}
}

func liveWorkers(draining ...string) map[string]*metadata.Worker {
	out := map[string]*metadata.Worker{}
	for i := range 5 {
		id := fmt.Sprintf("w%d", i)
		out[id] = &metadata.Worker{ID: id, State: metadata.WorkerAlive}
	}
	for _, id := range draining {
		out[id].State = metadata.WorkerDraining
	}
	return out
}

const run, stop = metadata.DesiredRun, metadata.DesiredStop

func TestReconcile_ServiceRollsOneAtATime(t *testing.T) {
	t.Parallel()
	j := schedJob("service", 3, false, 2,
		alloc("a", "w0", 1, metadata.AllocRunning, run), alloc("b", "w1", 1, metadata.AllocRunning, run),
		alloc("c", "w2", 1, metadata.AllocRunning, run))
	d := reconcile(j, liveWorkers())
	require.Equal(t, []string{"a"}, d.stop)
	require.Equal(t, 1, d.need)
	// While the new one is not running yet, nothing else moves.
	j.Allocs[0].Desired = stop
	j.Allocs = append(j.Allocs, alloc("n1", "w3", 2, metadata.AllocStarting, run))
	d = reconcile(j, liveWorkers())
	require.Empty(t, d.stop)
	require.Equal(t, 0, d.need)
	// Once it runs and the old one stopped, the next old one goes.
	j.Allocs[0].State = metadata.AllocStopped
	j.Allocs[3].State = metadata.AllocRunning
	d = reconcile(j, liveWorkers())
	require.Equal(t, []string{"b"}, d.stop)
	require.Equal(t, 1, d.need)
}

func TestReconcile_DrainPlacesFirstThenStops(t *testing.T) {
	t.Parallel()
	j := schedJob("service", 2, false, 1,
		alloc("a", "w0", 1, metadata.AllocRunning, run), alloc("b", "w1", 1, metadata.AllocRunning, run))
	d := reconcile(j, liveWorkers("w0"))
	require.Equal(t, 1, d.need, "a replacement first")
	require.Empty(t, d.stop, "the drained one keeps serving until then")
	j.Allocs = append(j.Allocs, alloc("c", "w2", 1, metadata.AllocRunning, run))
	d = reconcile(j, liveWorkers("w0"))
	require.Equal(t, 0, d.need)
	require.Equal(t, []string{"a"}, d.stop)
}

func TestReconcile_SingletonWaitsForTheOldOneToEnd(t *testing.T) {
	t.Parallel()
	j := schedJob("service", 1, true, 1, alloc("a", "w0", 1, metadata.AllocRunning, run))
	d := reconcile(j, liveWorkers("w0"))
	require.Equal(t, []string{"a"}, d.stop, "a drained singleton stops first")
	require.Equal(t, 0, d.need, "and nothing is placed while it may still run")
	j.Allocs[0].State = metadata.AllocStopped
	d = reconcile(j, liveWorkers("w0"))
	require.Equal(t, 1, d.need)
}

// TestReconcile_Decisions covers the decisions one evaluation makes from
// one state; the scenarios above follow a job through several.
func TestReconcile_Decisions(t *testing.T) {
	t.Parallel()
	exitedOK := func(id, worker string) metadata.Allocation {
		a := alloc(id, worker, 1, metadata.AllocExited, run)
		ok := 0
		a.ExitCode = &ok
		return a
	}
	stopped := func(j *metadata.SchedJob) *metadata.SchedJob { j.Job.Stopped = true; return j }
	var failing []metadata.Allocation
	for i := range maxFailedReschedules(1) {
		failing = append(failing, alloc(fmt.Sprint("f", i), "w0", 1, metadata.AllocFailed, run))
	}
	cases := []struct {
		name string
		job  *metadata.SchedJob
		need int
		stop []string // compared as a set
	}{
		{name: "a new job needs its count", job: schedJob("service", 3, false, 1), need: 3},
		{name: "a lost service allocation is replaced", job: schedJob("service", 2, false, 1,
			alloc("a", "w0", 1, metadata.AllocRunning, run), alloc("b", "w1", 1, metadata.AllocLost, run)), need: 1},
		{name: "a batch allocation that succeeded is not", job: schedJob("batch", 2, false, 1,
			alloc("a", "w0", 1, metadata.AllocRunning, run), exitedOK("b", "w1")), need: 0},
		{name: "scaling down stops the extra allocation", job: schedJob("service", 1, false, 1,
			alloc("a", "w0", 1, metadata.AllocRunning, run), alloc("b", "w1", 1, metadata.AllocRunning, run)),
			stop: []string{"b"}},
		{name: "a stopped job stops everything", job: stopped(schedJob("service", 1, false, 1,
			alloc("a", "w0", 1, metadata.AllocRunning, run), alloc("b", "w1", 1, metadata.AllocRunning, run))),
			stop: []string{"a", "b"}},
		// A job that keeps failing is not rescheduled forever.
		{name: "failed reschedules are bounded", job: schedJob("batch", 1, false, 1, failing...), need: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := reconcile(tc.job, liveWorkers())
			require.Equal(t, tc.need, d.need)
			require.ElementsMatch(t, tc.stop, d.stop)
		})
	}
}
