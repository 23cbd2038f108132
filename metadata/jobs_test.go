package metadata

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func jobCmd(t *testing.T, name string, count int, singleton bool) *Command {
	t.Helper()
	spec := JobSpec{Name: name, Count: count, Singleton: singleton, Task: Task{Command: "/bin/true"}}
	spec.Defaults()
	c, err := NewWorkerCommand(OpJobRegister, JobRegistration{Spec: spec, AtMS: 5})
	require.NoError(t, err)
	return c
}

func planCmd(t *testing.T, ctrl uint64, jps ...JobPlan) *Command {
	t.Helper()
	c, err := NewWorkerCommand(OpPlan, Plan{ControllerEpoch: ctrl, AtMS: 7, Jobs: jps})
	require.NoError(t, err)
	return c
}

func reportCmd(t *testing.T, worker string, epoch uint64, reps ...AllocReport) *Command {
	t.Helper()
	c, err := NewWorkerCommand(OpAllocUpdate, AllocUpdates{Workers: []WorkerReports{{Worker: worker, Epoch: epoch, Reports: reps}}})
	require.NoError(t, err)
	return c
}

// planFor builds a plan from the job's current sequence numbers.
func planFor(a *applier, job string, place ...NewAlloc) JobPlan {
	j, _ := a.s.Job(job)
	return JobPlan{Job: job, Version: j.Version, PlanSeq: j.PlanSeq, EvalSeq: j.EvalSeq, Place: place}
}

func TestJobs_SubmitIsIdempotentAndUpdateBumpsVersion(t *testing.T) {
	a := newApplier(t)
	res := a.apply(jobCmd(t, "j", 2, false))
	require.NoError(t, res.Err)
	require.Equal(t, JobRegisterResult{Changed: true, Version: 1}, res.Out)
	res = a.apply(jobCmd(t, "j", 2, false))
	require.Equal(t, JobRegisterResult{Changed: false, Version: 1}, res.Out)
	res = a.apply(jobCmd(t, "j", 3, false))
	require.Equal(t, JobRegisterResult{Changed: true, Version: 2}, res.Out)
	j, _ := a.s.Job("j")
	require.True(t, j.Pending())
	require.Equal(t, []string{"j"}, a.s.PendingJobs())

	bad := JobSpec{Name: "bad", Count: -1}
	c, _ := NewWorkerCommand(OpJobRegister, JobRegistration{Spec: bad})
	res = a.apply(c)
	require.ErrorIs(t, res.Err, ErrInvalid)
	_, ok := a.s.Job("bad")
	require.False(t, ok, "an invalid spec changes nothing")
}

func TestJobs_PlanIsRefusedWhenStaleOrUnsafe(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	require.NoError(t, a.apply(jobCmd(t, "j", 2, false)).Err)
	jp := planFor(a, "j", NewAlloc{ID: "a1", Worker: "w1", WorkerEpoch: 1})
	res := a.apply(planCmd(t, 3, jp))
	require.NoError(t, res.Err)
	require.Empty(t, res.Out.(PlanResult).Refused)
	require.False(t, func() bool { j, _ := a.s.Job("j"); return j.Pending() }())

	// The same plan again (a deposed leader's duplicate) is refused: the
	// plan sequence moved on.
	jp.Place = []NewAlloc{{ID: "a2", Worker: "w1", WorkerEpoch: 1}}
	res = a.apply(planCmd(t, 3, jp))
	require.Contains(t, res.Out.(PlanResult).Refused["j"], "stale plan")
	require.Len(t, a.s.Allocations("j", ""), 1)

	// A placement on a wrong epoch, or on an unknown worker, is refused.
	res = a.apply(planCmd(t, 3, planFor(a, "j", NewAlloc{ID: "a3", Worker: "w1", WorkerEpoch: 2})))
	require.Contains(t, res.Out.(PlanResult).Refused["j"], "not alive at epoch 2")
	res = a.apply(planCmd(t, 3, planFor(a, "j", NewAlloc{ID: "a4", Worker: "ghost", WorkerEpoch: 1})))
	require.Contains(t, res.Out.(PlanResult).Refused["j"], "not found")
	// A taken id is refused.
	res = a.apply(planCmd(t, 3, planFor(a, "j", NewAlloc{ID: "a1", Worker: "w1", WorkerEpoch: 1})))
	require.Contains(t, res.Out.(PlanResult).Refused["j"], "taken")
	// An older leader's plan is refused outright.
	res = a.apply(planCmd(t, 2, planFor(a, "j", NewAlloc{ID: "a5", Worker: "w1", WorkerEpoch: 1})))
	require.ErrorIs(t, res.Err, ErrInvalid)
	require.Len(t, a.s.Allocations("j", ""), 1)
}

func TestJobs_SingletonNeverGetsASecondLiveAllocation(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	require.NoError(t, a.apply(registerCmd(t, "w2", 1, 3)).Err)
	require.NoError(t, a.apply(jobCmd(t, "s", 1, true)).Err)
	require.Empty(t, a.apply(planCmd(t, 3, planFor(a, "s", NewAlloc{ID: "a1", Worker: "w1", WorkerEpoch: 1}))).Out.(PlanResult).Refused)
	// While a1 may still run, no second placement is accepted.
	res := a.apply(planCmd(t, 3, planFor(a, "s", NewAlloc{ID: "a2", Worker: "w2", WorkerEpoch: 1})))
	require.Contains(t, res.Out.(PlanResult).Refused["s"], "singleton")
	// Only the committed fence of w1's epoch ends a1 ...
	require.NoError(t, a.apply(transitionCmd(t, OpWorkerFence, 3, WorkerEpochRef{"w1", 1})).Err)
	al, _ := a.s.Allocation("a1")
	require.Equal(t, AllocLost, al.State)
	j, _ := a.s.Job("s")
	require.True(t, j.Pending(), "a lost allocation asks for an evaluation")
	// ... and then the replacement is accepted.
	require.Empty(t, a.apply(planCmd(t, 3, planFor(a, "s", NewAlloc{ID: "a2", Worker: "w2", WorkerEpoch: 1}))).Out.(PlanResult).Refused)
}

func TestJobs_ReportsOnlyFromTheLiveEpochAndNeverLeaveTerminal(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	require.NoError(t, a.apply(jobCmd(t, "j", 1, false)).Err)
	a.apply(planCmd(t, 3, planFor(a, "j", NewAlloc{ID: "a1", Worker: "w1", WorkerEpoch: 1})))
	v0 := a.s.AssignVersion("w1")
	require.NotZero(t, v0)
	as, ok := a.s.WorkerAssignment("w1")
	require.True(t, ok)
	require.Len(t, as.Allocs, 1)
	require.Equal(t, "/bin/true", as.Specs["j"].Task.Command)

	require.Equal(t, 1, a.apply(reportCmd(t, "w1", 1, AllocReport{ID: "a1", State: AllocRunning, AtMS: 10})).Out)
	al, _ := a.s.Allocation("a1")
	require.Equal(t, AllocRunning, al.State)
	require.Equal(t, int64(10), al.StartedAtMS)
	// A report from another epoch is ignored.
	require.Equal(t, 0, a.apply(reportCmd(t, "w1", 2, AllocReport{ID: "a1", State: AllocFailed})).Out)
	// The worker re-registers: the old epoch's allocation is lost and
	// the old epoch's late reports change nothing.
	require.NoError(t, a.apply(registerCmd(t, "w1", 2, 3)).Err)
	al, _ = a.s.Allocation("a1")
	require.Equal(t, AllocLost, al.State)
	require.Equal(t, 0, a.apply(reportCmd(t, "w1", 1, AllocReport{ID: "a1", State: AllocRunning})).Out)
	require.Equal(t, 0, a.apply(reportCmd(t, "w1", 2, AllocReport{ID: "a1", State: AllocRunning})).Out)
	al, _ = a.s.Allocation("a1")
	require.Equal(t, AllocLost, al.State)
	as, _ = a.s.WorkerAssignment("w1")
	require.Empty(t, as.Allocs)
	require.Greater(t, as.Version, v0)
}

func TestJobs_DrainRestartStopAndSnapshot(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	require.NoError(t, a.apply(jobCmd(t, "j", 1, false)).Err)
	a.apply(planCmd(t, 3, planFor(a, "j", NewAlloc{ID: "a1", Worker: "w1", WorkerEpoch: 1})))

	c, _ := NewWorkerCommand(OpAllocRestart, AllocRestartRequest{ID: "a1"})
	require.NoError(t, a.apply(c).Err)
	al, _ := a.s.Allocation("a1")
	require.Equal(t, uint64(1), al.RestartGen)
	c, _ = NewWorkerCommand(OpAllocRestart, AllocRestartRequest{ID: "zz"})
	require.ErrorIs(t, a.apply(c).Err, ErrAllocNotFound)

	c, _ = NewWorkerCommand(OpWorkerDrain, DrainRequest{Worker: "w1", Drain: true})
	require.NoError(t, a.apply(c).Err)
	w, _ := a.s.Worker("w1")
	require.Equal(t, WorkerDraining, w.State)
	// Drain survives a re-registration.
	require.NoError(t, a.apply(registerCmd(t, "w1", 2, 3)).Err)
	w, _ = a.s.Worker("w1")
	require.Equal(t, WorkerDraining, w.State)
	c, _ = NewWorkerCommand(OpWorkerDrain, DrainRequest{Worker: "nope", Drain: true})
	require.ErrorIs(t, a.apply(c).Err, ErrWorkerNotFound)

	c, _ = NewWorkerCommand(OpJobStop, JobStopRequest{Name: "j"})
	require.NoError(t, a.apply(c).Err)
	j, _ := a.s.Job("j")
	require.True(t, j.Stopped)
	c, _ = NewWorkerCommand(OpJobStop, JobStopRequest{Name: "nope"})
	require.ErrorIs(t, a.apply(c).Err, ErrJobNotFound)

	// Jobs and allocations survive a snapshot, with their index.
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	r := New()
	require.NoError(t, r.RestoreFrom(snap))
	require.Equal(t, a.s.Jobs(), r.Jobs())
	require.Equal(t, a.s.Allocations("", "w1"), r.Allocations("", "w1"))
	require.Equal(t, a.s.Allocations("j", ""), r.Allocations("j", ""))
}

func TestJobs_EndsFreeRoomCountFailuresAndAcceptLost(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	require.NoError(t, a.apply(jobCmd(t, "j", 2, false)).Err)
	require.NoError(t, a.apply(jobCmd(t, "waiting", 1, false)).Err)
	a.apply(planCmd(t, 3, planFor(a, "j", NewAlloc{ID: "a1", Worker: "w1", WorkerEpoch: 1}, NewAlloc{ID: "a2", Worker: "w1", WorkerEpoch: 1})))
	jp := planFor(a, "waiting")
	jp.Unplaced, jp.Reason = 1, "no room"
	a.apply(planCmd(t, 3, jp))
	w, _ := a.s.Job("waiting")
	require.False(t, w.Pending())

	code := 1
	a.apply(reportCmd(t, "w1", 1, AllocReport{ID: "a1", State: AllocFailed, ExitCode: &code}))
	j, _ := a.s.Job("j")
	require.Equal(t, 1, j.Failed, "failures are counted on the job, not only on kept allocations")
	w, _ = a.s.Job("waiting")
	require.True(t, w.Pending(), "an ended allocation freed room: unplaced jobs are evaluated again")

	// A supervisor that killed its task reports it lost.
	require.Equal(t, 1, a.apply(reportCmd(t, "w1", 1, AllocReport{ID: "a2", State: AllocLost, Message: "refreshes stopped"})).Out)
	al, _ := a.s.Allocation("a2")
	require.Equal(t, AllocLost, al.State)
	// A new version starts counting failures again.
	require.NoError(t, a.apply(jobCmd(t, "j", 3, false)).Err)
	j, _ = a.s.Job("j")
	require.Zero(t, j.Failed)
}
