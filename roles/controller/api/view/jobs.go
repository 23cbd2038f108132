package view

import "github.com/corral-dev/corral/metadata"

// Job is a job in API answers.
type Job struct {
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	Status      string            `json:"status"`
	Version     uint64            `json:"version"`
	Count       int               `json:"count"`
	Allocations map[string]int    `json:"allocations"`
	Unplaced    int               `json:"unplaced"`
	Reason      string            `json:"reason,omitempty"`
	SubmittedAt string            `json:"submitted_at,omitempty"`
	Pending     bool              `json:"evaluation_pending"`
	Spec        *metadata.JobSpec `json:"spec,omitempty"`
	Events      []JobEvent        `json:"events,omitempty"`
}

// JobEvent is one line of a job's history.
type JobEvent struct {
	At      string `json:"at"`
	Message string `json:"message"`
}

// Alloc is an allocation in API answers.
type Alloc struct {
	ID         string              `json:"id"`
	Job        string              `json:"job"`
	JobVersion uint64              `json:"job_version"`
	Worker     string              `json:"worker"`
	Epoch      uint64              `json:"epoch"`
	State      metadata.AllocState `json:"state"`
	Desired    string              `json:"desired"`
	ExitCode   *int                `json:"exit_code"`
	Restarts   int                 `json:"restarts"`
	Message    string              `json:"message,omitempty"`
	CreatedAt  string              `json:"created_at,omitempty"`
	StartedAt  string              `json:"started_at,omitempty"`
	EndedAt    string              `json:"ended_at,omitempty"`
	History    []AllocEvent        `json:"history,omitempty"`
}

// AllocEvent is one line of an allocation's history.
type AllocEvent struct {
	State   metadata.AllocState `json:"state"`
	At      string              `json:"at"`
	Message string              `json:"message,omitempty"`
}

// AllocView renders an allocation; history adds its events.
func AllocView(a *metadata.Allocation, history bool) Alloc {
	v := Alloc{ID: a.ID, Job: a.Job, JobVersion: a.JobVersion, Worker: a.Worker, Epoch: a.WorkerEpoch, State: a.State,
		Desired: a.Desired, ExitCode: a.ExitCode, Restarts: a.Restarts, Message: a.Message,
		CreatedAt: FormatMS(a.CreatedAtMS), StartedAt: FormatMS(a.StartedAtMS), EndedAt: FormatMS(a.EndedAtMS)}
	if history {
		for _, e := range a.History {
			v.History = append(v.History, AllocEvent{State: e.State, At: FormatMS(e.AtMS), Message: e.Message})
		}
	}
	return v
}

// SummarizeJob derives a job's status from its allocations: "stopped"
// (or "stopping" while some still run), "complete" for a batch job whose
// allocations all succeeded, "running" when count allocations of the
// current version run, "failed" when nothing runs and some failed,
// "pending" otherwise (placing, starting, or waiting for room).
func SummarizeJob(j *metadata.Job, allocs []metadata.Allocation) Job {
	v := Job{Name: j.Name, Type: j.Spec.Type, Version: j.Version, Count: j.Spec.Count, Allocations: map[string]int{},
		Unplaced: j.Unplaced, Reason: j.Reason, SubmittedAt: FormatMS(j.SubmittedAtMS), Pending: j.Pending()}
	var live, running, succeeded, failed int
	for i := range allocs {
		a := &allocs[i]
		v.Allocations[string(a.State)]++
		if !a.State.Terminal() {
			live++
		}
		if a.JobVersion != j.Version {
			continue
		}
		switch {
		case a.State == metadata.AllocRunning && a.Desired == metadata.DesiredRun:
			running++
		case a.State == metadata.AllocExited && a.ExitCode != nil && *a.ExitCode == 0:
			succeeded++
		case a.State == metadata.AllocFailed:
			failed++
		}
	}
	switch {
	case j.Stopped && live > 0:
		v.Status = "stopping"
	case j.Stopped:
		v.Status = "stopped"
	case j.Spec.Type == metadata.JobBatch && succeeded >= j.Spec.Count:
		v.Status = "complete"
	case running >= j.Spec.Count:
		v.Status = "running"
	case live == 0 && failed > 0 && !j.Pending():
		v.Status = "failed"
	default:
		v.Status = "pending"
	}
	return v
}
