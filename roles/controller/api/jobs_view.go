package api

import (
	"github.com/corral-dev/corral/metadata"
)

// jobJSON is a job in API answers.
type jobJSON struct {
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
	Events      []jobEventJSON    `json:"events,omitempty"`
}

type jobEventJSON struct {
	At      string `json:"at"`
	Message string `json:"message"`
}

// allocJSON is an allocation in API answers.
type allocJSON struct {
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
	History    []allocEventJSON    `json:"history,omitempty"`
}

type allocEventJSON struct {
	State   metadata.AllocState `json:"state"`
	At      string              `json:"at"`
	Message string              `json:"message,omitempty"`
}

func allocView(a *metadata.Allocation, history bool) allocJSON {
	v := allocJSON{ID: a.ID, Job: a.Job, JobVersion: a.JobVersion, Worker: a.Worker, Epoch: a.WorkerEpoch, State: a.State,
		Desired: a.Desired, ExitCode: a.ExitCode, Restarts: a.Restarts, Message: a.Message,
		CreatedAt: FormatMS(a.CreatedAtMS), StartedAt: FormatMS(a.StartedAtMS), EndedAt: FormatMS(a.EndedAtMS)}
	if history {
		for _, e := range a.History {
			v.History = append(v.History, allocEventJSON{State: e.State, At: FormatMS(e.AtMS), Message: e.Message})
		}
	}
	return v
}

// summarizeJob derives a job's status from its allocations: "stopped"
// (or "stopping" while some still run), "complete" for a batch job whose
// allocations all succeeded, "running" when count allocations of the
// current version run, "failed" when nothing runs and some failed,
// "pending" otherwise (placing, starting, or waiting for room).
func summarizeJob(j *metadata.Job, allocs []metadata.Allocation) jobJSON {
	v := jobJSON{Name: j.Name, Type: j.Spec.Type, Version: j.Version, Count: j.Spec.Count, Allocations: map[string]int{},
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

func (s *Server) jobDetail(j *metadata.Job) jobJSON {
	v := summarizeJob(j, s.store.State().Allocations(j.Name, ""))
	spec := j.Spec
	v.Spec = &spec
	for _, e := range j.Events {
		v.Events = append(v.Events, jobEventJSON{At: FormatMS(e.AtMS), Message: e.Message})
	}
	return v
}
