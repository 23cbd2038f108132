package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/metadata/jobspec"
)

// maxJobSpecBytes bounds a submitted job spec.
const maxJobSpecBytes = 256 << 10

func (s *Server) registerJobRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/jobs", s.handleJobSubmit)
	mux.HandleFunc("GET /v1/jobs", s.handleJobList)
	mux.HandleFunc("GET /v1/jobs/{name}", s.handleJobGet)
	mux.HandleFunc("DELETE /v1/jobs/{name}", s.handleJobStop)
	mux.HandleFunc("GET /v1/allocations", s.handleAllocList)
	mux.HandleFunc("GET /v1/allocations/{id}", s.handleAllocGet)
	mux.HandleFunc("GET /v1/allocations/{id}/logs", s.handleAllocLogs)
	mux.HandleFunc("POST /v1/allocations/{id}/restart", s.handleAllocRestart)
	mux.HandleFunc("POST /v1/workers/{id}/drain", s.handleWorkerDrain)
}

// specError is the 400 answer for an invalid job spec: every field named.
type specError struct {
	Message string                `json:"error"`
	Code    string                `json:"code"`
	Fields  []metadata.FieldError `json:"fields,omitempty"`
}

func writeSpecError(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, &specError{Message: err.Error(), Code: "invalid_spec", Fields: metadata.SpecFields(err)})
}

func (s *Server) handleJobSubmit(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJobSpecBytes+1))
	if err != nil {
		writeError(w, badRequest("read job spec: %v", err))
		return
	}
	if len(body) > maxJobSpecBytes {
		writeError(w, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("job spec is larger than %d bytes", maxJobSpecBytes)})
		return
	}
	spec, err := jobspec.Parse(body)
	if err != nil {
		writeSpecError(w, err)
		return
	}
	res, err := s.store.ProposePayload(r.Context(), metadata.OpJobRegister, metadata.JobRegistration{Spec: *spec, AtMS: time.Now().UnixMilli()})
	if err != nil {
		if metadata.SpecFields(err) != nil {
			writeSpecError(w, err)
			return
		}
		writeError(w, err)
		return
	}
	out, _ := res.Out.(metadata.JobRegisterResult)
	j, _ := s.store.State().Job(spec.Name)
	writeJSON(w, http.StatusOK, map[string]any{"job": s.jobDetail(&j), "changed": out.Changed})
}

// readable makes the request's read linearizable unless it asks for
// ?consistency=serializable.
func (s *Server) readable(w http.ResponseWriter, r *http.Request) bool {
	switch cons := r.URL.Query().Get("consistency"); cons {
	case "", "linearizable":
		if err := s.store.LinearizableRead(r.Context()); err != nil {
			writeError(w, err)
			return false
		}
	case "serializable":
	default:
		writeError(w, badRequest("consistency must be linearizable or serializable, got %q", cons))
		return false
	}
	return true
}

func (s *Server) handleJobList(w http.ResponseWriter, r *http.Request) {
	if !s.readable(w, r) {
		return
	}
	st := s.store.State()
	jobs := st.Jobs()
	out := make([]jobJSON, 0, len(jobs))
	for i := range jobs {
		out = append(out, summarizeJob(&jobs[i], st.Allocations(jobs[i].Name, "")))
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

func jobNotFound(name string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: "job_not_found",
		Message: fmt.Sprintf("job %q not found; list jobs with GET /v1/jobs", name)}
}

func (s *Server) handleJobGet(w http.ResponseWriter, r *http.Request) {
	if !s.readable(w, r) {
		return
	}
	name := r.PathValue("name")
	j, ok := s.store.State().Job(name)
	if !ok {
		writeError(w, jobNotFound(name))
		return
	}
	allocs := s.store.State().Allocations(name, "")
	views := make([]allocJSON, len(allocs))
	for i := range allocs {
		views[i] = allocView(&allocs[i], false)
	}
	writeJSON(w, http.StatusOK, map[string]any{"job": s.jobDetail(&j), "allocations": views})
}

func (s *Server) handleJobStop(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	_, err := s.store.ProposePayload(r.Context(), metadata.OpJobStop, metadata.JobStopRequest{Name: name, AtMS: time.Now().UnixMilli()})
	if errors.Is(err, metadata.ErrJobNotFound) {
		writeError(w, jobNotFound(name))
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	j, _ := s.store.State().Job(name)
	writeJSON(w, http.StatusOK, map[string]any{"job": s.jobDetail(&j)})
}

func (s *Server) handleAllocList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !s.readable(w, r) {
		return
	}
	allocs := s.store.State().Allocations(q.Get("job"), q.Get("worker"))
	state := q.Get("state")
	out := make([]allocJSON, 0, len(allocs))
	for i := range allocs {
		if state == "" || string(allocs[i].State) == state {
			out = append(out, allocView(&allocs[i], false))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"allocations": out})
}

func allocNotFound(id string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: "allocation_not_found",
		Message: fmt.Sprintf("allocation %q not found; list them with GET /v1/allocations", id)}
}

func (s *Server) handleAllocGet(w http.ResponseWriter, r *http.Request) {
	if !s.readable(w, r) {
		return
	}
	id := r.PathValue("id")
	a, ok := s.store.State().Allocation(id)
	if !ok {
		writeError(w, allocNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"allocation": allocView(&a, true)})
}

func (s *Server) handleAllocRestart(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	_, err := s.store.ProposePayload(r.Context(), metadata.OpAllocRestart, metadata.AllocRestartRequest{ID: id, AtMS: time.Now().UnixMilli()})
	switch {
	case errors.Is(err, metadata.ErrAllocNotFound):
		writeError(w, allocNotFound(id))
		return
	case errors.Is(err, metadata.ErrInvalid):
		writeJSON(w, http.StatusConflict, &apiError{Code: "not_running", Message: err.Error()})
		return
	case err != nil:
		writeError(w, err)
		return
	}
	a, _ := s.store.State().Allocation(id)
	writeJSON(w, http.StatusOK, map[string]any{"allocation": allocView(&a, true)})
}

func (s *Server) handleWorkerDrain(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := metadata.ValidateWorkerID(id); err != nil {
		writeError(w, badRequest("%v", err))
		return
	}
	req := struct {
		Drain *bool `json:"drain"`
	}{}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		writeError(w, badRequest("read body: %v", err))
		return
	}
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeError(w, badRequest("body must be {\"drain\": true|false}: %v", err))
			return
		}
	}
	drain := req.Drain == nil || *req.Drain
	_, err = s.store.ProposePayload(r.Context(), metadata.OpWorkerDrain, metadata.DrainRequest{Worker: id, Drain: drain, AtMS: time.Now().UnixMilli()})
	if errors.Is(err, metadata.ErrWorkerNotFound) {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: "worker_not_found", Message: fmt.Sprintf("worker %q not found", id)})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	wk, _ := s.store.State().Worker(id)
	writeJSON(w, http.StatusOK, map[string]any{"worker": id, "state": wk.State, "drain": wk.Drain})
}
