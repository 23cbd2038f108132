package metadata

import (
	"encoding/json"
	"sort"
)

// Job ops (50-59). Payloads are JSON documents in Command.Value. Only
// decisions and state changes are committed: a job submission, a stop, one
// evaluation's placements (a plan), the state changes workers report, a
// drain, a restart request.
const (
	// OpJobRegister submits or updates a job (JobRegistration).
	OpJobRegister Op = 50
	// OpJobStop stops every allocation of a job (JobStopRequest).
	OpJobStop Op = 51
	// OpPlan commits the outcome of evaluations: new allocations and
	// allocations to stop (Plan).
	OpPlan Op = 52
	// OpAllocUpdate records allocation states reported by workers
	// (AllocUpdates).
	OpAllocUpdate Op = 53
	// OpWorkerDrain starts or ends a worker's drain (DrainRequest).
	OpWorkerDrain Op = 54
	// OpAllocRestart asks a worker to restart one allocation's task
	// (AllocRestartRequest).
	OpAllocRestart Op = 55
)

// AllocState is where an allocation is in its life.
type AllocState string

// Allocation states. The last four are terminal: an allocation never
// leaves them, and a replacement is always a new allocation.
const (
	AllocPending  AllocState = "pending"  // placed, the worker has not started it yet
	AllocStarting AllocState = "starting" // the worker is starting (or restarting) the task
	AllocRunning  AllocState = "running"
	AllocExited   AllocState = "exited"  // the task exited by itself (batch: 0 is success)
	AllocFailed   AllocState = "failed"  // restarts spent, or it could not start
	AllocLost     AllocState = "lost"    // its worker epoch was fenced, left or replaced
	AllocStopped  AllocState = "stopped" // stopped on request (job stop, update, drain, scale down)
)

// Terminal reports whether the allocation can no longer run.
func (a AllocState) Terminal() bool {
	switch a {
	case AllocExited, AllocFailed, AllocLost, AllocStopped:
		return true
	}
	return false
}

// Desired states of an allocation, set by the scheduler.
const (
	DesiredRun  = "run"
	DesiredStop = "stop"
)

// maxHistory bounds the events kept per job and per allocation.
const maxHistory = 20

// Job is a submitted job as the replicated state knows it.
type Job struct {
	Name string  `json:"name"`
	Spec JobSpec `json:"spec"`
	// Version grows with every changed submission; allocations remember
	// the version they run, so an update can roll them over.
	Version uint64 `json:"version"`
	Stopped bool   `json:"stopped,omitempty"`
	// EvalSeq grows with every event that needs an evaluation of the job;
	// EvaluatedSeq is the EvalSeq the last committed plan saw. The job
	// waits for the scheduler while EvalSeq > EvaluatedSeq, on any leader.
	EvalSeq      uint64 `json:"eval_seq"`
	EvaluatedSeq uint64 `json:"evaluated_seq"`
	// PlanSeq grows with every committed plan (and every submission or
	// stop). A plan names the PlanSeq it was computed from and is refused
	// when another one committed meanwhile: two plans (for example one
	// from a deposed leader) can never both place the same missing
	// allocation.
	PlanSeq uint64 `json:"plan_seq"`
	// WaitRunning: the last plan waits for allocations to start running
	// (a rolling update or a drain proceeds as they do), so a "running"
	// report asks for an evaluation. Otherwise only ends do: a busy
	// cluster's start reports must not flood the scheduler.
	WaitRunning bool `json:"wait_running,omitempty"`
	// Failed counts the allocations of the current version that failed
	// (restarts spent); it bounds rescheduling even after ended
	// allocations are dropped.
	Failed int `json:"failed,omitempty"`
	// Unplaced allocations could not be placed; Reason says why.
	Unplaced      int        `json:"unplaced,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	SubmittedAtMS int64      `json:"submitted_at_ms"`
	Events        []JobEvent `json:"events,omitempty"`
}

// JobEvent is one line of a job's history.
type JobEvent struct {
	AtMS    int64  `json:"at_ms"`
	Message string `json:"message"`
}

// Allocation is one instance of a job placed on one worker epoch.
type Allocation struct {
	ID          string     `json:"id"`
	Job         string     `json:"job"`
	JobVersion  uint64     `json:"job_version"`
	Worker      string     `json:"worker"`
	WorkerEpoch uint64     `json:"worker_epoch"`
	Desired     string     `json:"desired"`
	State       AllocState `json:"state"`
	ExitCode    *int       `json:"exit_code,omitempty"`
	// Restarts counts restarts on the worker (policy or user request);
	// RestartGen grows with every user request.
	Restarts    int          `json:"restarts,omitempty"`
	RestartGen  uint64       `json:"restart_gen,omitempty"`
	Message     string       `json:"message,omitempty"`
	CreatedAtMS int64        `json:"created_at_ms"`
	StartedAtMS int64        `json:"started_at_ms,omitempty"`
	EndedAtMS   int64        `json:"ended_at_ms,omitempty"`
	History     []AllocEvent `json:"history,omitempty"`
}

// AllocEvent is one state change of an allocation.
type AllocEvent struct {
	State   AllocState `json:"state"`
	AtMS    int64      `json:"at_ms"`
	Message string     `json:"message,omitempty"`
}

func (a *Allocation) clone() Allocation {
	c := *a
	c.History = append([]AllocEvent(nil), a.History...)
	if a.ExitCode != nil {
		v := *a.ExitCode
		c.ExitCode = &v
	}
	return c
}

func (j *Job) clone() Job {
	c := *j
	c.Events = append([]JobEvent(nil), j.Events...)
	// The spec holds maps and slices; a round trip is the simplest deep
	// copy and jobs are few compared with allocations.
	b, _ := json.Marshal(&j.Spec)
	c.Spec = JobSpec{}
	_ = json.Unmarshal(b, &c.Spec)
	return c
}

// Pending reports whether the job waits for an evaluation.
func (j *Job) Pending() bool { return j.EvalSeq > j.EvaluatedSeq }

// jobIndex holds the lookups derived from the allocations; it is never
// serialised and is rebuilt whenever the ext state is decoded.
type jobIndex struct {
	byWorker map[string]map[string]*Allocation
	byJob    map[string]map[string]*Allocation
}

func (e *extState) reindexAllocs() {
	e.idx = jobIndex{byWorker: map[string]map[string]*Allocation{}, byJob: map[string]map[string]*Allocation{}}
	for _, a := range e.Allocs {
		e.idx.add(a)
	}
}

func (x *jobIndex) add(a *Allocation) {
	if x.byWorker == nil {
		x.byWorker, x.byJob = map[string]map[string]*Allocation{}, map[string]map[string]*Allocation{}
	}
	if x.byWorker[a.Worker] == nil {
		x.byWorker[a.Worker] = map[string]*Allocation{}
	}
	x.byWorker[a.Worker][a.ID] = a
	if x.byJob[a.Job] == nil {
		x.byJob[a.Job] = map[string]*Allocation{}
	}
	x.byJob[a.Job][a.ID] = a
}

func (x *jobIndex) remove(a *Allocation) {
	delete(x.byWorker[a.Worker], a.ID)
	if len(x.byWorker[a.Worker]) == 0 {
		delete(x.byWorker, a.Worker)
	}
	delete(x.byJob[a.Job], a.ID)
	if len(x.byJob[a.Job]) == 0 {
		delete(x.byJob, a.Job)
	}
}

// Jobs returns copies of every job, ordered by name.
func (s *State) Jobs() []Job {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Job, 0, len(s.ext.Jobs))
	for _, j := range s.ext.Jobs {
		out = append(out, j.clone())
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// Job returns a copy of one job.
func (s *State) Job(name string) (Job, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	j, ok := s.ext.Jobs[name]
	if !ok {
		return Job{}, false
	}
	return j.clone(), true
}

// Allocation returns a copy of one allocation.
func (s *State) Allocation(id string) (Allocation, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.ext.Allocs[id]
	if !ok {
		return Allocation{}, false
	}
	return a.clone(), true
}

// Allocations returns copies of the allocations of job on worker ("" for
// any), ordered by creation time then id.
func (s *State) Allocations(job, worker string) []Allocation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var src map[string]*Allocation
	switch {
	case job != "":
		src = s.ext.idx.byJob[job]
	case worker != "":
		src = s.ext.idx.byWorker[worker]
	default:
		src = s.ext.Allocs
	}
	out := make([]Allocation, 0, len(src))
	for _, a := range src {
		if (job == "" || a.Job == job) && (worker == "" || a.Worker == worker) {
			out = append(out, a.clone())
		}
	}
	sortAllocs(out)
	return out
}

func sortAllocs(out []Allocation) {
	sort.Slice(out, func(i, k int) bool {
		if out[i].CreatedAtMS != out[k].CreatedAtMS {
			return out[i].CreatedAtMS < out[k].CreatedAtMS
		}
		return out[i].ID < out[k].ID
	})
}

// AllocCounts returns the number of allocations per state.
func (s *State) AllocCounts() map[AllocState]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[AllocState]int{}
	for _, a := range s.ext.Allocs {
		out[a.State]++
	}
	return out
}

// PendingJobs returns the names of the jobs waiting for an evaluation.
func (s *State) PendingJobs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for name, j := range s.ext.Jobs {
		if j.Pending() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Assignment is what one worker epoch must run: every non-terminal
// allocation placed on it. Version grows whenever that set or one of its
// members' desired state changes.
type Assignment struct {
	Epoch   uint64
	Version uint64
	Allocs  []Allocation
	// Specs are the job specs the allocations run, by job name.
	Specs map[string]JobSpec
}

// AssignVersion returns the version of a worker's assignment (cheap: it
// is read on every heartbeat).
func (s *State) AssignVersion(worker string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w := s.ext.Workers[worker]; w != nil {
		return w.AssignVersion
	}
	return 0
}

// AssignVersions returns AssignVersion for each worker id, under one read
// lock (the pusher asks for every session at once).
func (s *State) AssignVersions(ids []string) []uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]uint64, len(ids))
	for i, id := range ids {
		if w := s.ext.Workers[id]; w != nil {
			out[i] = w.AssignVersion
		}
	}
	return out
}

// WorkerAssignment returns what the worker must run at its current epoch.
func (s *State) WorkerAssignment(worker string) (Assignment, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	w := s.ext.Workers[worker]
	if w == nil {
		return Assignment{}, false
	}
	as := Assignment{Epoch: w.Epoch, Version: w.AssignVersion, Specs: map[string]JobSpec{}}
	for _, a := range s.ext.idx.byWorker[worker] {
		if a.State.Terminal() || a.WorkerEpoch != w.Epoch {
			continue
		}
		as.Allocs = append(as.Allocs, a.clone())
		if _, ok := as.Specs[a.Job]; !ok {
			if j := s.ext.Jobs[a.Job]; j != nil {
				as.Specs[a.Job] = j.clone().Spec
			}
		}
	}
	sortAllocs(as.Allocs)
	return as, true
}

// SchedJob is a job with its allocations, as the scheduler reads it.
type SchedJob struct {
	Job    Job
	Allocs []Allocation
}

// SchedView is a consistent read of what the scheduler needs: the jobs to
// evaluate with their allocations, every worker, and the resources that
// non-terminal allocations claim on each worker.
type SchedView struct {
	Jobs    []SchedJob
	Workers []Worker
	Used    map[string]Resources
	// Allocs counts the non-terminal allocations on each worker (for its
	// MaxAllocs).
	Allocs map[string]int
}

// SchedulerView returns the named jobs (missing ones are skipped), every
// worker and the resources claimed per worker, under one read lock.
func (s *State) SchedulerView(jobs []string) SchedView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := SchedView{Used: map[string]Resources{}, Allocs: map[string]int{}}
	for _, name := range jobs {
		j := s.ext.Jobs[name]
		if j == nil {
			continue
		}
		sj := SchedJob{Job: j.clone()}
		sj.Allocs = make([]Allocation, 0, len(s.ext.idx.byJob[name]))
		for _, a := range s.ext.idx.byJob[name] {
			c := *a // the scheduler reads no history: a shallow copy will do
			c.History = nil
			sj.Allocs = append(sj.Allocs, c)
		}
		sortAllocs(sj.Allocs)
		v.Jobs = append(v.Jobs, sj)
	}
	for _, w := range s.ext.Workers {
		v.Workers = append(v.Workers, w.clone())
	}
	sort.Slice(v.Workers, func(i, k int) bool { return v.Workers[i].ID < v.Workers[k].ID })
	for _, a := range s.ext.Allocs {
		if a.State.Terminal() {
			continue
		}
		j := s.ext.Jobs[a.Job]
		if j == nil {
			continue
		}
		u := v.Used[a.Worker]
		r := j.Spec.Task.Resources.Effective()
		u.CPUMillis += r.CPUMillis
		u.MemoryMB += r.MemoryMB
		v.Used[a.Worker] = u
		v.Allocs[a.Worker]++
	}
	return v
}

// checkJobs rejects a snapshot whose allocations name unknown jobs, and
// builds the derived index.
func (e *extState) checkJobs() error {
	for id, a := range e.Allocs {
		if a == nil || a.ID != id || e.Jobs[a.Job] == nil {
			return corrupt("allocation %q does not match its key or names an unknown job", id)
		}
	}
	for name, j := range e.Jobs {
		if j == nil || j.Name != name {
			return corrupt("job %q does not match its key", name)
		}
	}
	e.reindexAllocs()
	return nil
}

// AffectsJobs reports whether a log entry's command can change what the
// scheduler or the workers must do (job, allocation and worker ops), by
// its op alone (an ACL fence's inner op), without decoding it.
func AffectsJobs(entry []byte) bool {
	op, ok := entryOp(entry) // through an ACL fence (acl_fence.go)
	return ok && ((op >= OpWorkerRegister && op < 30) || (op >= OpJobRegister && op < 60))
}
