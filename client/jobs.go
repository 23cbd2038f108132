package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Jobs errors, matched with errors.Is.
var (
	// ErrInvalidSpec: a submitted job spec was rejected (HTTP 400, code "invalid_spec"). The error is a *SpecError
	// listing every invalid field.
	ErrInvalidSpec = errors.New("invalid job spec")
	// ErrJobNotFound: no job has that name (HTTP 404, code "job_not_found").
	ErrJobNotFound = errors.New("job not found")
	// ErrAllocNotFound: no allocation has that id (HTTP 404, code "allocation_not_found").
	ErrAllocNotFound = errors.New("allocation not found")
	// ErrWorkerNotFound: no worker has that id (HTTP 404, code "worker_not_found").
	ErrWorkerNotFound = errors.New("worker not found")
	// ErrLogUnavailable: the allocation's worker could not serve its log (HTTP 404, code "log_unavailable"), e.g.
	// the worker is gone or the log was removed.
	ErrLogUnavailable = errors.New("log unavailable")
	// ErrNotRunning: only a running allocation can be restarted (HTTP 409, code "not_running").
	ErrNotRunning = errors.New("allocation not running")
)

func init() {
	codeSentinels["invalid_spec"] = ErrInvalidSpec
	codeSentinels["job_not_found"] = ErrJobNotFound
	codeSentinels["allocation_not_found"] = ErrAllocNotFound
	codeSentinels["worker_not_found"] = ErrWorkerNotFound
	codeSentinels["log_unavailable"] = ErrLogUnavailable
	codeSentinels["not_running"] = ErrNotRunning
}

// FieldError names one invalid field of a job spec by its JSON path ("task.command", "constraints[0].operator";
// "(spec)" for the document as a whole).
type FieldError struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// SpecError is the answer to an invalid job spec: every invalid field, plus the API error it came with. Through
// Unwrap it matches errors.Is(err, ErrInvalidSpec) and errors.As(err, **Error).
type SpecError struct {
	Fields []FieldError
	// Err is the API error (HTTP 400, code "invalid_spec") with the server's message.
	Err *Error
}

// Error implements error.
func (e *SpecError) Error() string {
	if len(e.Fields) == 0 {
		return e.Err.Error()
	}
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Problem
	}
	return "invalid job spec: " + strings.Join(parts, "; ")
}

// Unwrap returns the API error, so errors.Is(err, ErrInvalidSpec) holds.
func (e *SpecError) Unwrap() error { return e.Err }

// JobEvent is one entry of a job's recent history ("submitted version 2", "1 allocation unplaced: ...").
type JobEvent struct {
	At      time.Time `json:"at"`
	Message string    `json:"message"`
}

// UnmarshalJSON accepts the API's RFC 3339 times; a missing or empty time is the zero time.
func (e *JobEvent) UnmarshalJSON(b []byte) error {
	var w struct {
		At      string `json:"at"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = JobEvent{At: parseTime(w.At), Message: w.Message}
	return nil
}

// Job is a job as the API describes it. Jobs lists carry no Spec and no Events; Job, SubmitJob and StopJob do.
type Job struct {
	Name string `json:"name"`
	// Type is "service" (restarted when it exits) or "batch" (runs to completion).
	Type string `json:"type"`
	// Status is derived from the allocations: pending, running, complete (batch), failed, stopping or stopped.
	Status string `json:"status"`
	// Version grows with every changed submission.
	Version uint64 `json:"version"`
	// Count is the number of instances the spec asks for.
	Count int `json:"count"`
	// Allocations counts the job's allocations (all versions) by state.
	Allocations map[string]int `json:"allocations"`
	// Unplaced instances could not be placed; Reason says why.
	Unplaced int    `json:"unplaced"`
	Reason   string `json:"reason,omitempty"`
	// SubmittedAt is when the current version was submitted.
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	// EvaluationPending reports that the scheduler has not yet acted on the latest change.
	EvaluationPending bool `json:"evaluation_pending"`
	// Spec is the submitted spec (with defaults filled in) as JSON.
	Spec   json.RawMessage `json:"spec,omitempty"`
	Events []JobEvent      `json:"events,omitempty"`
}

// UnmarshalJSON accepts the API's RFC 3339 times; a missing or empty time is the zero time.
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	var w struct {
		plain
		SubmittedAt string `json:"submitted_at"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*j = Job(w.plain)
	j.SubmittedAt = parseTime(w.SubmittedAt)
	return nil
}

// AllocEvent is one state change of an allocation.
type AllocEvent struct {
	State   string    `json:"state"`
	At      time.Time `json:"at"`
	Message string    `json:"message,omitempty"`
}

// UnmarshalJSON accepts the API's RFC 3339 times; a missing or empty time is the zero time.
func (e *AllocEvent) UnmarshalJSON(b []byte) error {
	var w struct {
		State   string `json:"state"`
		At      string `json:"at"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = AllocEvent{State: w.State, At: parseTime(w.At), Message: w.Message}
	return nil
}

// Allocation is one instance of a job placed on one worker epoch.
type Allocation struct {
	ID         string `json:"id"`
	Job        string `json:"job"`
	JobVersion uint64 `json:"job_version"`
	Worker     string `json:"worker"`
	// Epoch is the worker registration the allocation was placed on; it is lost when that epoch ends.
	Epoch uint64 `json:"epoch"`
	// State is pending, starting, running, exited, failed, lost or stopped.
	State string `json:"state"`
	// Desired is "run" or "stop".
	Desired string `json:"desired"`
	// ExitCode is the task's last exit code, nil while it has none.
	ExitCode  *int      `json:"exit_code"`
	Restarts  int       `json:"restarts"`
	Message   string    `json:"message,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// History is only filled in by Allocation and RestartAlloc.
	History []AllocEvent `json:"history,omitempty"`
}

// UnmarshalJSON accepts the API's RFC 3339 times; a missing or empty time is the zero time.
func (a *Allocation) UnmarshalJSON(b []byte) error {
	type plain Allocation
	var w struct {
		plain
		CreatedAt string `json:"created_at"`
		StartedAt string `json:"started_at"`
		EndedAt   string `json:"ended_at"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = Allocation(w.plain)
	a.CreatedAt, a.StartedAt, a.EndedAt = parseTime(w.CreatedAt), parseTime(w.StartedAt), parseTime(w.EndedAt)
	return nil
}

// WorkerDrain is the answer to DrainWorker.
type WorkerDrain struct {
	Worker string `json:"worker"`
	// State is the worker's state after the change (draining, alive, or fenced/left for a worker that is away:
	// the drain flag then applies when it registers again).
	State string `json:"state"`
	Drain bool   `json:"drain"`
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// pathSegment escapes one path segment; "." and ".." are sent as %2E so that servers which clean paths do not
// turn the request into one for another resource.
func pathSegment(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

func jobPath(name string) (string, error) {
	if name == "" {
		return "", errors.New("client: empty job name")
	}
	return "/v1/jobs/" + pathSegment(name), nil
}

func allocPath(id string) (string, error) {
	if id == "" {
		return "", errors.New("client: empty allocation id")
	}
	return "/v1/allocations/" + pathSegment(id), nil
}

// SubmitJob registers a job spec, JSON or YAML, or updates the job of that name. changed is false when the spec
// equals the current version's (nothing happens then, so resubmitting is safe). An invalid spec fails with a
// *SpecError naming every invalid field (errors.Is(err, ErrInvalidSpec)).
func (c *Client) SubmitJob(ctx context.Context, spec []byte) (job Job, changed bool, err error) {
	if spec == nil {
		spec = []byte{}
	}
	var out struct {
		Job     Job  `json:"job"`
		Changed bool `json:"changed"`
	}
	ct := "application/yaml"
	if t := strings.TrimSpace(string(spec)); strings.HasPrefix(t, "{") {
		ct = "application/json"
	}
	if err := c.do(ctx, call{method: http.MethodPost, path: "/v1/jobs", body: spec, contentType: ct}, &out); err != nil {
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Code == "invalid_spec" {
			return Job{}, false, &SpecError{Fields: apiErr.Fields, Err: apiErr}
		}
		return Job{}, false, err
	}
	return out.Job, out.Changed, nil
}

// Jobs lists every job (without specs and events), sorted by name.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/jobs"}, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// Job returns a job with its spec and recent events, and its allocations (ErrJobNotFound if there is none of that
// name).
func (c *Client) Job(ctx context.Context, name string) (Job, []Allocation, error) {
	p, err := jobPath(name)
	if err != nil {
		return Job{}, nil, err
	}
	var out struct {
		Job         Job          `json:"job"`
		Allocations []Allocation `json:"allocations"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: p}, &out); err != nil {
		return Job{}, nil, err
	}
	return out.Job, out.Allocations, nil
}

// StopJob stops every allocation of a job and returns the job as it is right after (usually "stopping"). The job
// stays listed as stopped; submitting it again starts it anew. ErrJobNotFound if there is none of that name.
func (c *Client) StopJob(ctx context.Context, name string) (Job, error) {
	p, err := jobPath(name)
	if err != nil {
		return Job{}, err
	}
	var out struct {
		Job Job `json:"job"`
	}
	if err := c.do(ctx, call{method: http.MethodDelete, path: p}, &out); err != nil {
		return Job{}, err
	}
	return out.Job, nil
}

// AllocFilter selects allocations; empty fields match everything.
type AllocFilter struct {
	Job, Worker, State string
}

// Allocations lists the allocations of job on worker; an empty job or worker matches all.
func (c *Client) Allocations(ctx context.Context, job, worker string) ([]Allocation, error) {
	return c.FilterAllocations(ctx, AllocFilter{Job: job, Worker: worker})
}

// FilterAllocations lists the allocations that match f (without their history).
func (c *Client) FilterAllocations(ctx context.Context, f AllocFilter) ([]Allocation, error) {
	q := url.Values{}
	for k, v := range map[string]string{"job": f.Job, "worker": f.Worker, "state": f.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out struct {
		Allocations []Allocation `json:"allocations"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/allocations", query: q}, &out); err != nil {
		return nil, err
	}
	return out.Allocations, nil
}

// Allocation returns one allocation with its state history (ErrAllocNotFound if there is none with that id).
func (c *Client) Allocation(ctx context.Context, id string) (Allocation, error) {
	p, err := allocPath(id)
	if err != nil {
		return Allocation{}, err
	}
	var out struct {
		Allocation Allocation `json:"allocation"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: p}, &out); err != nil {
		return Allocation{}, err
	}
	return out.Allocation, nil
}

// RestartAlloc asks the allocation's worker to restart its task in place. Only a running allocation can be
// restarted (ErrNotRunning otherwise).
func (c *Client) RestartAlloc(ctx context.Context, id string) (Allocation, error) {
	p, err := allocPath(id)
	if err != nil {
		return Allocation{}, err
	}
	var out struct {
		Allocation Allocation `json:"allocation"`
	}
	if err := c.do(ctx, call{method: http.MethodPost, path: p + "/restart", body: []byte{}}, &out); err != nil {
		return Allocation{}, err
	}
	return out.Allocation, nil
}

// DrainWorker marks a worker as draining (drain=true): it gets no new allocations and its services move to other
// workers. drain=false makes it take work again. ErrWorkerNotFound if no worker has that id.
func (c *Client) DrainWorker(ctx context.Context, id string, drain bool) (WorkerDrain, error) {
	if id == "" {
		return WorkerDrain{}, errors.New("client: empty worker id")
	}
	var out WorkerDrain
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/workers/" + pathSegment(id) + "/drain",
		body: jsonBody(map[string]bool{"drain": drain})}, &out)
	if err != nil {
		return WorkerDrain{}, err
	}
	return out, nil
}

// errNoLogAnswer cancels a log request whose answer did not start within the client's timeout.
var errNoLogAnswer = errors.New("no answer in time")

// AllocLogs opens an allocation's log, read from its worker: stream is "stdout" (or "") or "stderr"; tail >= 0
// starts that many lines before the end (tail < 0: the whole log). With follow, the stream stays open and
// delivers new output until the allocation ends, ctx ends or the reader is closed.
//
// The client's timeout bounds only the wait for the answer to start, never the stream itself. The caller must
// close the reader.
func (c *Client) AllocLogs(ctx context.Context, id, stream string, follow bool, tail int) (io.ReadCloser, error) {
	p, err := allocPath(id)
	if err != nil {
		return nil, err
	}
	if stream == "" {
		stream = "stdout"
	}
	if stream != "stdout" && stream != "stderr" {
		return nil, fmt.Errorf("client: log stream must be stdout or stderr, got %q", stream)
	}
	q := url.Values{"stream": {stream}}
	if follow {
		q.Set("follow", "true")
	}
	if tail >= 0 {
		q.Set("tail", strconv.Itoa(tail))
	}
	sctx, cancel := context.WithCancelCause(ctx)
	var timer *time.Timer
	if c.timeout > 0 {
		timer = time.AfterFunc(c.timeout, func() { cancel(errNoLogAnswer) })
	}
	cl := call{method: http.MethodGet, path: p + "/logs", query: q}
	resp, err := c.doStream(sctx, cl)
	if timer != nil && !timer.Stop() && ctx.Err() == nil {
		// Our own deadline fired (perhaps just after the answer started, which would cut it).
		if resp != nil {
			_ = resp.Body.Close()
		}
		cancel(nil)
		return nil, fmt.Errorf("%s %s: no answer within %s: %w", cl.method, cl.path, c.timeout, ErrTimeout)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	return &logReader{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}, nil
}

type logReader struct {
	io.ReadCloser
	cancel func()
}

func (r *logReader) Close() error {
	r.cancel()
	return r.ReadCloser.Close()
}
