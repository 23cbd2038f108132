// Package scheduler decides where allocations run: it reconciles each
// job's allocations with its spec and places what is missing on feasible
// workers. It is pure: a replicated view and explicit inputs (loads, time,
// term, an id source) in, a plan out; no raft, no clock, no randomness
// inside. The controller's scheduling loop commits the plans it makes.
package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/corral-dev/corral/metadata"
)

// schedWorker is a worker as the scheduler sees it: what it offers, what
// allocations already claim, and the load it last reported.
type schedWorker struct {
	ID       string
	Epoch    uint64
	Labels   map[string]string
	Capacity metadata.Capacity
	// Used is claimed by allocations placed on the worker (counted from the
	// replicated allocations, not from reports, so two evaluations cannot
	// both spend the same room).
	Used metadata.Resources
	// Load is the CPU use the worker last reported, 0..1.
	Load float64
	// JobAllocs counts allocations of the job being placed already there.
	JobAllocs int
	// Allocs counts the non-terminal allocations on the worker, of every
	// job; MaxAllocs is the most it accepts (metadata.Worker.MaxAllocs).
	Allocs, MaxAllocs int
}

// placement assigns one new allocation to a worker at its current epoch.
type placement struct {
	WorkerID    string
	WorkerEpoch uint64
}

// placeResult is the outcome of one evaluation's placement pass.
type placeResult struct {
	Placements []placement
	// Reason explains why fewer than the wanted allocations were placed.
	Reason string
}

// place chooses workers for want new allocations of spec. Only feasible
// workers are used (constraints, free cpu and memory); binpack prefers the
// fullest, spread the emptiest, with fewer allocations of the same job
// first. Ties break on the worker id so the choice is reproducible.
// Workers are updated in place with what was placed.
func place(spec *metadata.JobSpec, want int, workers []*schedWorker) placeResult {
	var res placeResult
	res.Placements = make([]placement, 0, want)
	var filtered filterCounts
	feasible := make([]*schedWorker, 0, len(workers))
	for _, w := range workers {
		if filtered.admit(spec, w) {
			feasible = append(feasible, w)
		}
	}
	for len(res.Placements) < want {
		best := pickWorker(spec, feasible)
		if best == nil {
			// Say why the workers that were feasible filled up.
			for _, w := range feasible {
				filtered.admit(spec, w)
			}
			res.Reason = filtered.reason(len(workers), want-len(res.Placements))
			return res
		}
		r := spec.Task.Resources.Effective()
		best.Used.CPUMillis += r.CPUMillis
		best.Used.MemoryMB += r.MemoryMB
		best.JobAllocs++
		best.Allocs++
		res.Placements = append(res.Placements, placement{WorkerID: best.ID, WorkerEpoch: best.Epoch})
		if spec.Singleton {
			break
		}
	}
	return res
}

// filterCounts records why workers were found infeasible.
type filterCounts struct{ constraint, cpu, memory, allocs int }

func (f *filterCounts) admit(spec *metadata.JobSpec, w *schedWorker) bool {
	switch {
	case !spec.Matches(w.Labels):
		f.constraint++
	case !fitsCPU(spec, w):
		f.cpu++
	case !fitsMemory(spec, w):
		f.memory++
	case !fitsAllocs(w):
		f.allocs++
	default:
		return true
	}
	return false
}

func (f *filterCounts) reason(total, missing int) string {
	if total == 0 {
		return fmt.Sprintf("%d allocation(s) not placed: no alive worker", missing)
	}
	var parts []string
	if f.constraint > 0 {
		parts = append(parts, fmt.Sprintf("%d worker(s) do not meet the constraints", f.constraint))
	}
	if f.cpu > 0 {
		parts = append(parts, fmt.Sprintf("%d have too little free cpu", f.cpu))
	}
	if f.memory > 0 {
		parts = append(parts, fmt.Sprintf("%d have too little free memory", f.memory))
	}
	if f.allocs > 0 {
		parts = append(parts, fmt.Sprintf("%d already run their maximum number of allocations (--max-allocs)", f.allocs))
	}
	if len(parts) == 0 {
		parts = append(parts, "the remaining workers ran out of room")
	}
	return fmt.Sprintf("%d allocation(s) not placed on %d alive worker(s): %s", missing, total, strings.Join(parts, ", "))
}

// fitsCPU and fitsMemory count the task at its effective resources (at
// least metadata.MinTaskCPUMillis and MinTaskMemoryMB).
func fitsCPU(spec *metadata.JobSpec, w *schedWorker) bool {
	return w.Used.CPUMillis+spec.Task.Resources.Effective().CPUMillis <= w.Capacity.CPUMillis
}

func fitsMemory(spec *metadata.JobSpec, w *schedWorker) bool {
	return w.Used.MemoryMB+spec.Task.Resources.Effective().MemoryMB <= w.Capacity.MemoryMB
}

// fitsAllocs reports whether w takes one more allocation. MaxAllocs 0
// (a schedWorker built without it) means metadata.DefaultMaxAllocs.
func fitsAllocs(w *schedWorker) bool {
	limit := w.MaxAllocs
	if limit <= 0 {
		limit = metadata.DefaultMaxAllocs
	}
	return w.Allocs < limit
}

// utilization is the larger of a worker's cpu and memory shares claimed,
// blended with the cpu load it reports so that busy workers look fuller.
func utilization(w *schedWorker) float64 {
	u := 0.0
	if w.Capacity.CPUMillis > 0 {
		u = float64(w.Used.CPUMillis) / float64(w.Capacity.CPUMillis)
	}
	if w.Capacity.MemoryMB > 0 {
		u = max(u, float64(w.Used.MemoryMB)/float64(w.Capacity.MemoryMB))
	}
	return 0.8*u + 0.2*w.Load
}

func pickWorker(spec *metadata.JobSpec, feasible []*schedWorker) *schedWorker {
	var best *schedWorker
	var bestScore float64
	for _, w := range feasible {
		if !fitsCPU(spec, w) || !fitsMemory(spec, w) || !fitsAllocs(w) {
			continue
		}
		score := utilization(w)
		if spec.Placement == metadata.PlaceSpread {
			// Fewer instances of this job first, then the emptiest worker.
			score = -(float64(w.JobAllocs) + score)
		}
		if best == nil || score > bestScore || (score == bestScore && w.ID < best.ID) {
			best, bestScore = w, score
		}
	}
	return best
}

// sortWorkers orders workers by id, the deterministic input order.
func sortWorkers(ws []*schedWorker) {
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
}
