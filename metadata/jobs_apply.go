package metadata

import (
	"errors"
	"fmt"
	"sort"
)

// ErrJobNotFound and ErrAllocNotFound name missing objects.
var (
	ErrJobNotFound   = errors.New("job not found")
	ErrAllocNotFound = errors.New("allocation not found")
)

// JobRegistration is the payload of OpJobRegister. The spec is already
// defaulted and validated by the proposer; apply validates it again.
type JobRegistration struct {
	Spec JobSpec `json:"spec"`
	AtMS int64   `json:"at_ms"`
}

// JobRegisterResult is Result.Out of OpJobRegister.
type JobRegisterResult struct {
	Changed bool   `json:"changed"`
	Version uint64 `json:"version"`
}

// JobStopRequest is the payload of OpJobStop.
type JobStopRequest struct {
	Name string `json:"name"`
	AtMS int64  `json:"at_ms"`
}

// Plan is the payload of OpPlan: the decisions of one scheduler pass, one
// JobPlan per evaluated job. Each JobPlan is applied whole or not at all.
type Plan struct {
	ControllerEpoch uint64    `json:"controller_epoch"`
	AtMS            int64     `json:"at_ms"`
	Jobs            []JobPlan `json:"jobs"`
}

// JobPlan is one evaluation's outcome.
type JobPlan struct {
	Job string `json:"job"`
	// Version, PlanSeq and EvalSeq are the job's as the scheduler read
	// them; the plan is refused if Version or PlanSeq changed since.
	Version uint64     `json:"version"`
	PlanSeq uint64     `json:"plan_seq"`
	EvalSeq uint64     `json:"eval_seq"`
	Place   []NewAlloc `json:"place,omitempty"`
	Stop    []string   `json:"stop,omitempty"`
	// StopReason is recorded on the stopped allocations.
	StopReason string `json:"stop_reason,omitempty"`
	Unplaced   int    `json:"unplaced,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// WaitRunning asks for an evaluation when an allocation of the job
	// starts running (see Job.WaitRunning).
	WaitRunning bool `json:"wait_running,omitempty"`
}

// NewAlloc is one placement: a fresh allocation id on a worker epoch.
type NewAlloc struct {
	ID          string `json:"id"`
	Worker      string `json:"worker"`
	WorkerEpoch uint64 `json:"worker_epoch"`
}

// PlanResult is Result.Out of OpPlan: the jobs whose part was refused.
type PlanResult struct {
	Refused map[string]string `json:"refused,omitempty"`
}

// AllocUpdates is the payload of OpAllocUpdate: reports from workers,
// each accepted only from the worker's current, live epoch.
type AllocUpdates struct {
	Workers []WorkerReports `json:"workers"`
}

// WorkerReports are the reports of one worker epoch.
type WorkerReports struct {
	Worker  string        `json:"worker"`
	Epoch   uint64        `json:"epoch"`
	Reports []AllocReport `json:"reports"`
}

// AllocReport is one allocation state change seen by its worker.
type AllocReport struct {
	ID       string     `json:"id"`
	State    AllocState `json:"state"`
	ExitCode *int       `json:"exit_code,omitempty"`
	Restarts int        `json:"restarts,omitempty"`
	Message  string     `json:"message,omitempty"`
	AtMS     int64      `json:"at_ms"`
}

// DrainRequest is the payload of OpWorkerDrain.
type DrainRequest struct {
	Worker string `json:"worker"`
	Drain  bool   `json:"drain"`
	AtMS   int64  `json:"at_ms"`
}

// AllocRestartRequest is the payload of OpAllocRestart.
type AllocRestartRequest struct {
	ID   string `json:"id"`
	AtMS int64  `json:"at_ms"`
}

func (s *State) applyJobRegister(c *Command) Result {
	var r JobRegistration
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	if err := r.Spec.Validate(); err != nil {
		return Result{Revision: s.revision, Err: err}
	}
	if s.ext.Jobs == nil {
		s.ext.Jobs = map[string]*Job{}
	}
	j := s.ext.Jobs[r.Spec.Name]
	if j != nil && !j.Stopped && j.Spec.Equal(&r.Spec) {
		return Result{Revision: s.revision, Out: JobRegisterResult{Changed: false, Version: j.Version}}
	}
	msg := "submitted"
	if j == nil {
		j = &Job{Name: r.Spec.Name}
		s.ext.Jobs[r.Spec.Name] = j
	} else if j.Stopped {
		msg = "submitted again after a stop"
	} else {
		msg = "updated"
	}
	j.Spec, j.Stopped, j.SubmittedAtMS = r.Spec, false, r.AtMS
	j.Version++
	s.extBytes += int64(len(c.Value)) // size.go: the estimate grows with each new spec
	j.Failed = 0
	j.PlanSeq++
	s.wantEval(j)
	j.event(r.AtMS, fmt.Sprintf("version %d %s", j.Version, msg))
	return Result{Revision: s.revision, Out: JobRegisterResult{Changed: true, Version: j.Version}}
}

func (s *State) applyJobStop(c *Command) Result {
	var r JobStopRequest
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	j := s.ext.Jobs[r.Name]
	if j == nil {
		return Result{Revision: s.revision, Err: fmt.Errorf("stop job %q: %w", r.Name, ErrJobNotFound)}
	}
	if !j.Stopped {
		j.Stopped = true
		j.PlanSeq++
		j.Unplaced, j.Reason = 0, ""
		s.wantEval(j)
		j.event(r.AtMS, "stopped")
	}
	return Result{Revision: s.revision}
}

func (j *Job) event(at int64, msg string) {
	j.Events = append(j.Events, JobEvent{AtMS: at, Message: msg})
	if n := len(j.Events); n > maxHistory {
		j.Events = append([]JobEvent(nil), j.Events[n-maxHistory:]...)
	}
}

func (s *State) wantEval(j *Job) { j.EvalSeq++ }

// bumpAssign marks a worker's assignment as changed.
func (s *State) bumpAssign(worker string) {
	if w := s.ext.Workers[worker]; w != nil {
		s.ext.AssignSeq++
		w.AssignVersion = s.ext.AssignSeq
		s.ext.assigns.add(s.ext.AssignSeq, worker)
	}
}

func (s *State) applyPlan(c *Command) Result {
	var p Plan
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if res, ok := s.checkControllerEpoch(c.Op, p.ControllerEpoch); !ok {
		return res
	}
	out := PlanResult{}
	for i := range p.Jobs {
		jp := &p.Jobs[i]
		if why := s.checkJobPlan(jp); why != "" {
			if out.Refused == nil {
				out.Refused = map[string]string{}
			}
			out.Refused[jp.Job] = why
			continue
		}
		s.applyJobPlan(jp, p.AtMS)
	}
	return Result{Revision: s.revision, Out: out}
}

// checkJobPlan says why a job plan must be refused, or "". It re-checks
// what makes running twice impossible instead of trusting the scheduler:
// placements go only to a live, non-draining worker at its current epoch,
// and a singleton gets a placement only when nothing of it is left that
// could still run.
func (s *State) checkJobPlan(jp *JobPlan) string {
	j := s.ext.Jobs[jp.Job]
	switch {
	case j == nil:
		return "job not found"
	case j.Version != jp.Version || j.PlanSeq != jp.PlanSeq:
		return fmt.Sprintf("stale plan: job at version %d plan %d, plan computed at %d/%d", j.Version, j.PlanSeq, jp.Version, jp.PlanSeq)
	case j.Stopped && len(jp.Place) > 0:
		return "job is stopped"
	}
	if j.Spec.Singleton && len(jp.Place) > 0 {
		if len(jp.Place) > 1 {
			return "more than one placement for a singleton"
		}
		for _, a := range s.ext.idx.byJob[jp.Job] {
			if !a.State.Terminal() {
				return fmt.Sprintf("singleton: allocation %s is still %s", a.ID, a.State)
			}
		}
	}
	for _, na := range jp.Place {
		w := s.ext.Workers[na.Worker]
		switch {
		case na.ID == "" || s.ext.Allocs[na.ID] != nil:
			return fmt.Sprintf("allocation id %q is empty or taken", na.ID)
		case w == nil:
			return fmt.Sprintf("worker %s not found", na.Worker)
		case w.Epoch != na.WorkerEpoch || w.State != WorkerAlive:
			return fmt.Sprintf("worker %s is %s at epoch %d, not alive at epoch %d", na.Worker, w.State, w.Epoch, na.WorkerEpoch)
		}
	}
	for _, id := range jp.Stop {
		if a := s.ext.Allocs[id]; a == nil || a.Job != jp.Job {
			return fmt.Sprintf("allocation %s to stop is not part of the job", id)
		}
	}
	return ""
}

func (s *State) applyJobPlan(jp *JobPlan, at int64) {
	j := s.ext.Jobs[jp.Job]
	if s.ext.Allocs == nil {
		s.ext.Allocs = map[string]*Allocation{}
	}
	for _, na := range jp.Place {
		a := &Allocation{
			ID: na.ID, Job: j.Name, JobVersion: j.Version, Worker: na.Worker, WorkerEpoch: na.WorkerEpoch,
			Desired: DesiredRun, State: AllocPending, CreatedAtMS: at,
			History: []AllocEvent{{State: AllocPending, AtMS: at, Message: "placed on " + na.Worker}},
		}
		s.ext.Allocs[a.ID] = a
		s.ext.idx.add(a)
		s.bumpAssign(na.Worker)
	}
	for _, id := range jp.Stop {
		a := s.ext.Allocs[id]
		if a.State.Terminal() || a.Desired == DesiredStop {
			continue
		}
		a.Desired = DesiredStop
		a.Message = jp.StopReason
		s.bumpAssign(a.Worker)
	}
	if len(jp.Place) > 0 {
		j.event(at, fmt.Sprintf("placed %d allocation(s)", len(jp.Place)))
	}
	if len(jp.Stop) > 0 {
		j.event(at, fmt.Sprintf("stopping %d allocation(s): %s", len(jp.Stop), jp.StopReason))
	}
	if jp.Unplaced > 0 && (jp.Unplaced != j.Unplaced || jp.Reason != j.Reason) {
		j.event(at, jp.Reason)
	}
	j.Unplaced, j.Reason, j.WaitRunning = jp.Unplaced, jp.Reason, jp.WaitRunning
	s.gcAllocs(j)
	j.PlanSeq++
	if jp.EvalSeq > j.EvaluatedSeq {
		j.EvaluatedSeq = min(jp.EvalSeq, j.EvalSeq)
	}
}

func (s *State) applyAllocUpdate(c *Command) Result {
	var u AllocUpdates
	if err := decodePayload(c, &u); err != nil {
		return s.invalid("%v", err)
	}
	accepted, ended := 0, false
	for _, wr := range u.Workers {
		w := s.ext.Workers[wr.Worker]
		if w == nil || w.Epoch != wr.Epoch || (w.State != WorkerAlive && w.State != WorkerDraining) {
			continue // a fenced epoch's reports are refused
		}
		for i := range wr.Reports {
			if s.applyReport(wr.Worker, wr.Epoch, &wr.Reports[i]) {
				accepted++
				ended = ended || wr.Reports[i].State.Terminal()
			}
		}
	}
	if ended {
		s.wantEvalUnplaced() // room was freed
	}
	return Result{Revision: s.revision, Out: accepted}
}

// applyReport moves one allocation to the reported state when the report
// comes from the worker epoch it was placed on and the allocation is not
// terminal yet.
func (s *State) applyReport(worker string, epoch uint64, r *AllocReport) bool {
	a := s.ext.Allocs[r.ID]
	if a == nil || a.Worker != worker || a.WorkerEpoch != epoch || a.State.Terminal() {
		return false
	}
	switch r.State {
	case AllocStarting, AllocRunning, AllocExited, AllocFailed, AllocStopped:
	case AllocLost: // its supervisor killed it: the worker's session stalled
	default:
		return false
	}
	if r.State == a.State && r.Restarts == a.Restarts && r.Message == a.Message {
		return false
	}
	a.Restarts, a.Message = r.Restarts, r.Message
	if r.State != a.State {
		a.History = appendHistory(a.History, AllocEvent{State: r.State, AtMS: r.AtMS, Message: r.Message})
	}
	a.State = r.State
	if r.State == AllocRunning && a.StartedAtMS == 0 {
		a.StartedAtMS = r.AtMS
	}
	if r.State.Terminal() {
		a.EndedAtMS = r.AtMS
		if r.ExitCode != nil {
			v := *r.ExitCode
			a.ExitCode = &v
		}
		s.bumpAssign(worker)
	}
	j := s.ext.Jobs[a.Job]
	if j != nil && (r.State.Terminal() || (r.State == AllocRunning && j.WaitRunning)) {
		s.wantEval(j)
	}
	if j != nil && r.State == AllocFailed && a.JobVersion == j.Version {
		j.Failed++
	}
	return true
}

func appendHistory(h []AllocEvent, e AllocEvent) []AllocEvent {
	h = append(h, e)
	if n := len(h); n > maxHistory {
		h = append([]AllocEvent(nil), h[n-maxHistory:]...)
	}
	return h
}

// loseAllocs ends every non-terminal allocation of worker placed at an
// epoch up to epoch: the worker stopped them itself when it lost its
// session (it fences itself first), so the scheduler may replace them.
// Allocations already being stopped end as stopped, the others as lost.
func (s *State) loseAllocs(worker string, epoch uint64, at int64, why string) {
	for _, a := range s.ext.idx.byWorker[worker] {
		if a.State.Terminal() || a.WorkerEpoch > epoch {
			continue
		}
		to := AllocLost
		if a.Desired == DesiredStop {
			to = AllocStopped
		}
		a.State, a.EndedAtMS, a.Message = to, at, why
		a.History = appendHistory(a.History, AllocEvent{State: to, AtMS: at, Message: why})
		if j := s.ext.Jobs[a.Job]; j != nil {
			s.wantEval(j)
		}
	}
	s.wantEvalUnplaced() // room was freed
}

// wantEvalUnplaced asks for an evaluation of every job with allocations
// it could not place: room may have appeared.
func (s *State) wantEvalUnplaced() {
	for _, j := range s.ext.Jobs {
		if j.Unplaced > 0 && !j.Stopped {
			s.wantEval(j)
		}
	}
}

func (s *State) applyWorkerDrain(c *Command) Result {
	var r DrainRequest
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	w := s.ext.Workers[r.Worker]
	if w == nil {
		return Result{Revision: s.revision, Err: fmt.Errorf("drain worker %q: %w", r.Worker, ErrWorkerNotFound)}
	}
	if w.Drain == r.Drain {
		return Result{Revision: s.revision}
	}
	w.Drain = r.Drain
	switch {
	case r.Drain && w.State == WorkerAlive:
		w.State, w.StateChangedAtMS, w.Reason = WorkerDraining, r.AtMS, "drain"
	case !r.Drain && w.State == WorkerDraining:
		w.State, w.StateChangedAtMS, w.Reason = WorkerAlive, r.AtMS, "drain undone"
		s.wantEvalUnplaced()
	}
	for _, a := range s.ext.idx.byWorker[r.Worker] {
		if j := s.ext.Jobs[a.Job]; j != nil && !a.State.Terminal() {
			s.wantEval(j)
		}
	}
	return Result{Revision: s.revision}
}

func (s *State) applyAllocRestart(c *Command) Result {
	var r AllocRestartRequest
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	a := s.ext.Allocs[r.ID]
	switch {
	case a == nil:
		return Result{Revision: s.revision, Err: fmt.Errorf("restart allocation %q: %w", r.ID, ErrAllocNotFound)}
	case a.State.Terminal() || a.Desired == DesiredStop:
		return s.invalid("restart allocation %s: it is %s (desired %s); only a live allocation can be restarted", r.ID, a.State, a.Desired)
	}
	a.RestartGen++
	a.History = appendHistory(a.History, AllocEvent{State: a.State, AtMS: r.AtMS, Message: "restart requested"})
	s.bumpAssign(a.Worker)
	return Result{Revision: s.revision}
}

// keepEnded is how many ended allocations a job keeps for inspection
// (besides the succeeded ones of a batch job's current version, which it
// needs to know it is complete). Older ones are dropped, so a crash-looping
// service or a cluster that lost many workers does not grow the state
// without bound.
const keepEnded = 20

// gcAllocs drops a job's oldest ended allocations beyond keepEnded. It runs
// when a plan for the job applies: after every end, an evaluation follows.
func (s *State) gcAllocs(j *Job) {
	var ended []*Allocation
	for _, a := range s.ext.idx.byJob[j.Name] {
		if !a.State.Terminal() {
			continue
		}
		if j.Spec.Type == JobBatch && a.JobVersion == j.Version && a.State == AllocExited && a.ExitCode != nil && *a.ExitCode == 0 {
			continue
		}
		ended = append(ended, a)
	}
	if len(ended) <= keepEnded {
		return
	}
	sort.Slice(ended, func(i, k int) bool {
		if ended[i].EndedAtMS != ended[k].EndedAtMS {
			return ended[i].EndedAtMS < ended[k].EndedAtMS
		}
		return ended[i].ID < ended[k].ID
	})
	for _, a := range ended[:len(ended)-keepEnded] {
		delete(s.ext.Allocs, a.ID)
		s.ext.idx.remove(a)
	}
}
