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

func TestReconcile_NewJobNeedsCount(t *testing.T) {
	t.Parallel()
	d := reconcile(schedJob("service", 3, false, 1), liveWorkers())
	require.Equal(t, 3, d.need)
	require.Empty(t, d.stop)
}

func TestReconcile_LostServiceIsReplaced_BatchSuccessIsNot(t *testing.T) {
	t.Parallel()
	d := reconcile(schedJob("service", 2, false, 1,
		alloc("a", "w0", 1, metadata.AllocRunning, run), alloc("b", "w1", 1, metadata.AllocLost, run)), liveWorkers())
	require.Equal(t, 1, d.need)
	ok := 0
	b := alloc("b", "w1", 1, metadata.AllocExited, run)
	b.ExitCode = &ok
	d = reconcile(schedJob("batch", 2, false, 1, alloc("a", "w0", 1, metadata.AllocRunning, run), b), liveWorkers())
	require.Equal(t, 0, d.need)
}

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

func TestReconcile_ScaleDownAndStop(t *testing.T) {
	t.Parallel()
	j := schedJob("service", 1, false, 1,
		alloc("a", "w0", 1, metadata.AllocRunning, run), alloc("b", "w1", 1, metadata.AllocRunning, run))
	d := reconcile(j, liveWorkers())
	require.Equal(t, []string{"b"}, d.stop)
	j.Job.Stopped = true
	d = reconcile(j, liveWorkers())
	require.ElementsMatch(t, []string{"a", "b"}, d.stop)
	require.Equal(t, 0, d.need)
}

func TestReconcile_FailedRescheduleIsBounded(t *testing.T) {
	t.Parallel()
	var allocs []metadata.Allocation
	for i := range maxFailedReschedules(1) {
		allocs = append(allocs, alloc(fmt.Sprint("f", i), "w0", 1, metadata.AllocFailed, run))
	}
	d := reconcile(schedJob("batch", 1, false, 1, allocs...), liveWorkers())
	require.Equal(t, 0, d.need, "a job that keeps failing is not rescheduled forever")
}
