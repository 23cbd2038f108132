package scheduler

import (
	"time"

	"github.com/corral-dev/corral/metadata"
)

// Inputs are what a plan depends on besides the replicated view: the
// scheduler reads no clock, draws no random number and asks nobody, so the
// same view and inputs always give the same plan.
type Inputs struct {
	// Loads is each live worker's reported CPU use as a share of its
	// capacity (0..1); missing means unknown (0).
	Loads map[string]float64
	// Now stamps the plan (its AtMS).
	Now time.Time
	// Term is the controller epoch the plan is made in; apply refuses a
	// plan of an older epoch.
	Term uint64
	// NewID names each new allocation.
	NewID func() string
}

// Plan reconciles and places every job of the view. Placements of one job
// see the room taken by the jobs placed before it in the same pass.
func Plan(view metadata.SchedView, in Inputs) metadata.Plan {
	plan := metadata.Plan{ControllerEpoch: in.Term, AtMS: in.Now.UnixMilli()}
	byID := map[string]*metadata.Worker{}
	var pool []*schedWorker
	poolByID := map[string]*schedWorker{}
	loads := in.Loads
	for i := range view.Workers {
		w := &view.Workers[i]
		byID[w.ID] = w
		if w.State != metadata.WorkerAlive {
			continue
		}
		sw := &schedWorker{ID: w.ID, Epoch: w.Epoch, Labels: w.Labels, Capacity: w.Capacity,
			Used: view.Used[w.ID], Load: loads[w.ID], Allocs: view.Allocs[w.ID], MaxAllocs: w.MaxAllocs()}
		pool = append(pool, sw)
		poolByID[w.ID] = sw
	}
	budget := maxPlacementsPerPlan
	for i := range view.Jobs {
		if budget <= 0 {
			break // the other jobs stay pending for the next pass
		}
		sj := &view.Jobs[i]
		d := reconcile(sj, byID)
		partial := d.need > budget
		if partial {
			d.need = budget
		}
		jp := metadata.JobPlan{Job: sj.Job.Name, Version: sj.Job.Version, PlanSeq: sj.Job.PlanSeq, EvalSeq: sj.Job.EvalSeq,
			Stop: d.stop, StopReason: d.stopReason, WaitRunning: d.waitRunning}
		if d.need > 0 {
			for _, w := range pool {
				w.JobAllocs = 0
			}
			for _, a := range sj.Allocs {
				if w := poolByID[a.Worker]; w != nil && !a.State.Terminal() {
					w.JobAllocs++
				}
			}
			res := place(&sj.Job.Spec, d.need, pool)
			for _, p := range res.Placements {
				jp.Place = append(jp.Place, metadata.NewAlloc{ID: in.NewID(), Worker: p.WorkerID, WorkerEpoch: p.WorkerEpoch})
			}
			if missing := d.need - len(res.Placements); missing > 0 {
				jp.Unplaced, jp.Reason = missing, res.Reason
			} else if partial {
				jp.EvalSeq = sj.Job.EvaluatedSeq // not done: stay pending
			}
			budget -= len(res.Placements)
		}
		plan.Jobs = append(plan.Jobs, jp)
	}
	return plan
}

// maxPlacementsPerPlan bounds one plan entry (about 100 bytes a
// placement): applying a multi-megabyte entry would hold the raft loop
// long enough to delay heartbeats to followers. A job that needs more is
// placed over several passes: its evaluation stays pending until done.
const maxPlacementsPerPlan = 5000
