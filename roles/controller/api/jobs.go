package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/metadata/jobspec"
	"github.com/corral-dev/corral/roles/controller/api/view"
)

// maxJobSpecBytes bounds a submitted job spec.
const maxJobSpecBytes = 256 << 10

func (s *Server) registerJobRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/jobs", s.handle(s.handleJobSubmit))
	mux.HandleFunc("GET /v1/jobs", s.handle(s.handleJobList))
	mux.HandleFunc("GET /v1/jobs/{name}", s.handle(s.handleJobGet))
	mux.HandleFunc("DELETE /v1/jobs/{name}", s.handle(s.handleJobStop))
	mux.HandleFunc("GET /v1/allocations", s.handle(s.handleAllocList))
	mux.HandleFunc("GET /v1/allocations/{id}", s.handle(s.handleAllocGet))
	mux.HandleFunc("GET /v1/allocations/{id}/logs", s.handle(s.handleAllocLogs))
	mux.HandleFunc("POST /v1/allocations/{id}/restart", s.handle(s.handleAllocRestart))
	mux.HandleFunc("POST /v1/workers/{id}/drain", s.handle(s.handleWorkerDrain))
}

// specError is the 400 answer for an invalid job spec: every field named.
func specError(err error) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_spec", Message: err.Error(), Fields: metadata.SpecFields(err)}
}

func (s *Server) handleJobSubmit(_ http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJobSpecBytes+1))
	if err != nil {
		return nil, badRequest("read job spec: %v", err)
	}
	if len(body) > maxJobSpecBytes {
		return nil, tooLarge("job spec is larger than %d bytes", maxJobSpecBytes)
	}
	spec, err := jobspec.Parse(body)
	if err != nil {
		return nil, specError(err)
	}
	if err := allow(r, metadata.ACLJobs, metadata.ACLWrite, spec.Name); err != nil { // acl.go
		return nil, err
	}
	if err := s.admit(metadata.OpJobRegister); err != nil { // quota.go
		return nil, err
	}
	res, err := s.store.ProposePayload(r.Context(), metadata.OpJobRegister, metadata.JobRegistration{Spec: *spec, AtMS: time.Now().UnixMilli()})
	if err != nil {
		if metadata.SpecFields(err) != nil {
			return nil, specError(err)
		}
		return nil, err
	}
	out, _ := res.Out.(metadata.JobRegisterResult)
	j, _ := s.store.State().Job(spec.Name)
	return map[string]any{"job": s.jobDetail(&j), "changed": out.Changed}, nil
}

func (s *Server) handleJobList(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	st := s.store.State()
	jobs := st.Jobs()
	id := identity(r)
	out := make([]view.Job, 0, len(jobs))
	for i := range jobs {
		if id.Allows(metadata.ACLJobs, metadata.ACLRead, jobs[i].Name) { // the jobs the token may read
			out = append(out, view.SummarizeJob(&jobs[i], st.Allocations(jobs[i].Name, "")))
		}
	}
	return map[string]any{"jobs": out}, nil
}

func jobNotFound(name string) *apiError {
	return notFound("job_not_found", "job %q not found; list jobs with GET /v1/jobs", name)
}

func (s *Server) handleJobGet(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	j, ok := s.store.State().Job(name)
	if !ok {
		return nil, jobNotFound(name)
	}
	allocs := s.store.State().Allocations(name, "")
	views := make([]view.Alloc, len(allocs))
	for i := range allocs {
		views[i] = view.AllocView(&allocs[i], false)
	}
	return map[string]any{"job": s.jobDetail(&j), "allocations": views}, nil
}

func (s *Server) handleJobStop(_ http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	_, err := s.store.ProposePayload(r.Context(), metadata.OpJobStop, metadata.JobStopRequest{Name: name, AtMS: time.Now().UnixMilli()})
	if errors.Is(err, metadata.ErrJobNotFound) {
		return nil, jobNotFound(name)
	}
	if err != nil {
		return nil, err
	}
	j, _ := s.store.State().Job(name)
	return map[string]any{"job": s.jobDetail(&j)}, nil
}

func (s *Server) handleAllocList(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	allocs := s.store.State().Allocations(q.Get("job"), q.Get("worker"))
	state := q.Get("state")
	id := identity(r)
	out := make([]view.Alloc, 0, len(allocs))
	for i := range allocs {
		if (state == "" || string(allocs[i].State) == state) && id.Allows(metadata.ACLJobs, metadata.ACLRead, allocs[i].Job) {
			out = append(out, view.AllocView(&allocs[i], false))
		}
	}
	return map[string]any{"allocations": out}, nil
}

func allocNotFound(id string) *apiError {
	return notFound("allocation_not_found", "allocation %q not found; list them with GET /v1/allocations", id)
}

func (s *Server) handleAllocGet(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := s.readable(r); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	a, ok := s.store.State().Allocation(id)
	if !ok {
		return nil, allocNotFound(id)
	}
	if err := allow(r, metadata.ACLJobs, metadata.ACLRead, a.Job); err != nil {
		return nil, err
	}
	return map[string]any{"allocation": view.AllocView(&a, true)}, nil
}

// allowAlloc is nil when the caller may take acc on allocation id's job.
// An allocation this controller does not know yet is looked up again
// after a linearizable read; one still unknown is left to the handler's
// 404 (the state machine refuses unknown allocations too).
func (s *Server) allowAlloc(r *http.Request, id string, acc metadata.ACLAccess) error {
	if identity(r).Management() {
		return nil
	}
	a, ok := s.store.State().Allocation(id)
	if !ok {
		if err := s.store.LinearizableRead(r.Context()); err != nil {
			return err
		}
		if a, ok = s.store.State().Allocation(id); !ok {
			return nil
		}
	}
	return allow(r, metadata.ACLJobs, acc, a.Job)
}

func (s *Server) handleAllocRestart(_ http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := s.allowAlloc(r, id, metadata.ACLWrite); err != nil {
		return nil, err
	}
	_, err := s.store.ProposePayload(r.Context(), metadata.OpAllocRestart, metadata.AllocRestartRequest{ID: id, AtMS: time.Now().UnixMilli()})
	switch {
	case errors.Is(err, metadata.ErrAllocNotFound):
		return nil, allocNotFound(id)
	case errors.Is(err, metadata.ErrInvalid):
		return nil, httpError(http.StatusConflict, "not_running", "%s", err)
	case err != nil:
		return nil, err
	}
	a, _ := s.store.State().Allocation(id)
	return map[string]any{"allocation": view.AllocView(&a, true)}, nil
}

func (s *Server) handleWorkerDrain(_ http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := metadata.ValidateWorkerID(id); err != nil {
		return nil, badRequest("%v", err)
	}
	req := struct {
		Drain *bool `json:"drain"`
	}{}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		return nil, badRequest("read body: %v", err)
	}
	if len(body) > 0 {
		if err := decodeStrict(bytes.NewReader(body), &req); err != nil {
			return nil, badRequest("body must be {\"drain\": true|false}: %v", err)
		}
	}
	drain := req.Drain == nil || *req.Drain
	_, err = s.store.ProposePayload(r.Context(), metadata.OpWorkerDrain, metadata.DrainRequest{Worker: id, Drain: drain, AtMS: time.Now().UnixMilli()})
	if errors.Is(err, metadata.ErrWorkerNotFound) {
		return nil, notFound("worker_not_found", "worker %q not found", id)
	}
	if err != nil {
		return nil, err
	}
	wk, _ := s.store.State().Worker(id)
	return map[string]any{"worker": id, "state": wk.State, "drain": wk.Drain}, nil
}
