package scheduler

import (
	"github.com/corral-dev/corral/metadata"
)

// decision is what one evaluation wants done to a job, before placement:
// which allocations to stop (and why) and how many new ones it needs.
type decision struct {
	stop       []string
	stopReason string
	need       int
	// waitRunning: the next step waits for allocations to run (a rolling
	// update or a drain in progress).
	waitRunning bool
}

// reconcile compares a job's allocations with its spec, in the manner of
// nomad's reconciler but smaller. An allocation "counts" toward the job's
// count while it may run (or, for a batch job, once it succeeded; for a
// job that does not reschedule, also once it failed or was lost). Rules:
//
//   - a stopped job stops everything;
//   - allocations of an older version are rolled over: a batch job stops
//     them all; a service stops one at a time, and only while nothing else
//     is in transition, so the rest keep serving;
//   - allocations on a draining worker do not count: services are placed
//     elsewhere first and the old ones are stopped once enough of the new
//     ones run (batch allocations are left to finish);
//   - a singleton gets a new allocation only when none is left that could
//     still run, so a replacement is placed only after the old epoch's end
//     is committed.
func reconcile(sj *metadata.SchedJob, workers map[string]*metadata.Worker) decision {
	j := &sj.Job
	var d decision
	if j.Stopped {
		for _, a := range sj.Allocs {
			if !a.State.Terminal() && a.Desired == metadata.DesiredRun {
				d.stop = append(d.stop, a.ID)
			}
		}
		d.stopReason = "job stopped"
		return d
	}
	var (
		counted, runningNew, transit, failed int
		old, migrating, extra                []string
		live                                 int
	)
	batch := j.Spec.Type == metadata.JobBatch
	for i := range sj.Allocs {
		a := &sj.Allocs[i]
		if !a.State.Terminal() {
			live++
		}
		switch {
		case a.State.Terminal():
			if a.JobVersion != j.Version {
				break
			}
			if countsWhenEnded(j, a) {
				counted++
			} else if a.State == metadata.AllocFailed {
				failed++
			}
		case a.Desired == metadata.DesiredStop:
			transit++
		case a.JobVersion < j.Version:
			old = append(old, a.ID)
		case !batch && draining(workers, a.Worker):
			migrating = append(migrating, a.ID)
		default:
			counted++
			extra = append(extra, a.ID)
			if a.State == metadata.AllocRunning {
				runningNew++
			} else {
				transit++
			}
		}
	}
	if max(failed, j.Failed) >= maxFailedReschedules(j.Spec.Count) {
		counted += failed // give up: the failures stay as they are
	}
	switch {
	case batch && len(old) > 0:
		d.stop, d.stopReason = old, "job updated"
	case len(old) > 0 && transit == 0:
		d.stop, d.stopReason = old[:1], "job updated (rolling)"
		old = old[1:]
	}
	d.need = j.Spec.Count - counted
	if !batch {
		d.need -= len(old) // old versions keep serving until rolled
	}
	if len(migrating) > 0 && (j.Spec.Singleton || runningNew+len(old) >= j.Spec.Count) {
		d.stop = append(d.stop, migrating...)
		if d.stopReason == "" {
			d.stopReason = "worker draining"
		}
	} else if len(migrating) > 0 {
		d.waitRunning = true
	}
	if !batch && len(old) > 0 {
		d.waitRunning = true
	}
	if d.need < 0 {
		// Scale down: stop the newest first.
		n := min(-d.need, len(extra))
		d.stop = append(d.stop, extra[len(extra)-n:]...)
		if d.stopReason == "" {
			d.stopReason = "count lowered"
		}
		d.need = 0
	}
	if j.Spec.Singleton && live > 0 {
		d.need = 0 // wait until the last one has ended
	}
	return d
}

// maxFailedReschedules bounds how many allocations of one job version may
// fail (restarts spent) before the scheduler stops replacing them: a task
// that cannot run anywhere must not cycle through the cluster forever.
// Lost allocations (their worker died) are always replaced.
func maxFailedReschedules(count int) int { return max(3, count) }

// countsWhenEnded: a succeeded batch allocation is done for good, and a
// job that does not reschedule keeps its failed and lost allocations as
// they are.
func countsWhenEnded(j *metadata.Job, a *metadata.Allocation) bool {
	switch a.State {
	case metadata.AllocExited:
		if j.Spec.Type == metadata.JobBatch {
			return a.ExitCode != nil && *a.ExitCode == 0 || !j.Spec.Reschedules()
		}
		return !j.Spec.Reschedules()
	case metadata.AllocFailed, metadata.AllocLost:
		return !j.Spec.Reschedules()
	}
	return false
}

func draining(workers map[string]*metadata.Worker, id string) bool {
	w := workers[id]
	return w != nil && w.State == metadata.WorkerDraining
}
