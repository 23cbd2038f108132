package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// jobsFake imitates the jobs part of the corral HTTP API as roles/http_jobs.go specifies it: the answers' shapes
// and error codes, on a tiny in-memory state.
type jobsFake struct {
	srv *httptest.Server

	mu      sync.Mutex
	specs   map[string]string // job name -> submitted body
	version map[string]uint64
	reqs    []*http.Request // every request, in order
	bodies  []string        // their bodies
	// logHeaderDelay delays the log answer's headers; logChunks are sent logChunkGap apart.
	logHeaderDelay time.Duration
	logChunks      []string
	logChunkGap    time.Duration
}

const fakeJobTime = "2026-03-01T10:00:00.123Z"

func newJobsFake(t *testing.T) *jobsFake {
	t.Helper()
	f := &jobsFake{specs: map[string]string{}, version: map[string]uint64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", f.submit)
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		jobs := []map[string]any{}
		for name := range f.specs {
			jobs = append(jobs, f.jobJSON(name, false))
		}
		writeJSON(w, 200, map[string]any{"jobs": jobs})
	})
	mux.HandleFunc("GET /v1/jobs/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		name := r.PathValue("name")
		if _, ok := f.specs[name]; !ok {
			writeErr(w, apiError{status: 404, code: "job_not_found", msg: "job " + name + " not found"})
			return
		}
		writeJSON(w, 200, map[string]any{"job": f.jobJSON(name, true), "allocations": []any{allocJSON("a1", name, false)}})
	})
	mux.HandleFunc("DELETE /v1/jobs/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		name := r.PathValue("name")
		if _, ok := f.specs[name]; !ok {
			writeErr(w, apiError{status: 404, code: "job_not_found", msg: "job " + name + " not found"})
			return
		}
		j := f.jobJSON(name, true)
		j["status"] = "stopping"
		writeJSON(w, 200, map[string]any{"job": j})
	})
	mux.HandleFunc("GET /v1/allocations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"allocations": []any{allocJSON("a1", "web", false), allocJSON("a2", "web", false)}})
	})
	mux.HandleFunc("GET /v1/allocations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "a1" {
			writeErr(w, apiError{status: 404, code: "allocation_not_found", msg: "allocation not found"})
			return
		}
		writeJSON(w, 200, map[string]any{"allocation": allocJSON("a1", "web", true)})
	})
	mux.HandleFunc("POST /v1/allocations/{id}/restart", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "done" {
			writeErr(w, apiError{status: 409, code: "not_running", msg: "allocation done is exited, not running"})
			return
		}
		writeJSON(w, 200, map[string]any{"allocation": allocJSON(r.PathValue("id"), "web", true)})
	})
	mux.HandleFunc("POST /v1/workers/{id}/drain", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Drain bool `json:"drain"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeErr(w, apiError{status: 400, code: "bad_request", msg: err.Error()})
			return
		}
		if r.PathValue("id") == "ghost" {
			writeErr(w, apiError{status: 404, code: "worker_not_found", msg: "worker ghost not found"})
			return
		}
		state := map[bool]string{true: "draining", false: "alive"}[req.Drain]
		writeJSON(w, 200, map[string]any{"worker": r.PathValue("id"), "state": state, "drain": req.Drain})
	})
	mux.HandleFunc("GET /v1/allocations/{id}/logs", f.logs)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Clone(context.Background()))
		f.bodies = append(f.bodies, string(body))
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *jobsFake) last() (*http.Request, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1], f.bodies[len(f.bodies)-1]
}

func (f *jobsFake) jobJSON(name string, detail bool) map[string]any {
	j := map[string]any{"name": name, "type": "service", "status": "running", "version": f.version[name], "count": 2,
		"allocations": map[string]int{"running": 2}, "unplaced": 0, "submitted_at": fakeJobTime, "evaluation_pending": false}
	if detail {
		j["spec"] = map[string]any{"name": name, "type": "service", "count": 2, "task": map[string]any{"command": "/bin/sleep"}}
		j["events"] = []map[string]any{{"at": fakeJobTime, "message": "submitted version 1"}}
	}
	return j
}

func allocJSON(id, job string, history bool) map[string]any {
	a := map[string]any{"id": id, "job": job, "job_version": 1, "worker": "w-1", "epoch": 2, "state": "running",
		"desired": "run", "exit_code": nil, "restarts": 0, "created_at": fakeJobTime, "started_at": fakeJobTime}
	if history {
		a["history"] = []map[string]any{{"state": "pending", "at": fakeJobTime}, {"state": "running", "at": "", "message": "started"}}
	}
	return a
}

// submit accepts a spec whose first line names the job ("name: x" or {"name":"x"}); a spec containing "count: -1"
// is invalid.
func (f *jobsFake) submit(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := string(body)
	if strings.Contains(s, "count: -1") {
		writeJSON(w, 400, map[string]any{"error": "invalid job spec: count: must be at least 1; task.command: missing",
			"code": "invalid_spec", "fields": []map[string]string{
				{"field": "count", "problem": "must be at least 1"}, {"field": "task.command", "problem": "missing"}}})
		return
	}
	var spec struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(body, &spec) != nil {
		spec.Name = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(s, "\n", 2)[0], "name:"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := f.specs[spec.Name] != s
	if changed {
		f.specs[spec.Name] = s
		f.version[spec.Name]++
	}
	writeJSON(w, 200, map[string]any{"job": f.jobJSON(spec.Name, true), "changed": changed})
}

func (f *jobsFake) logs(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	delay, chunks, gap := f.logHeaderDelay, f.logChunks, f.logChunkGap
	f.mu.Unlock()
	if r.PathValue("id") == "gone" {
		writeErr(w, apiError{status: 404, code: "log_unavailable", msg: "worker w-9 is not connected"})
		return
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
	for i, c := range chunks {
		if i > 0 {
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, c)
		w.(http.Flusher).Flush()
	}
	if r.URL.Query().Get("follow") == "true" {
		<-r.Context().Done() // a followed log of a running allocation never ends by itself
	}
}

func TestSubmitJob(t *testing.T) {
	f := newJobsFake(t)
	c := newTestClient(t, Config{Endpoints: []string{f.srv.URL}})
	ctx := context.Background()

	spec := `{"name":"web","type":"service","count":2,"task":{"command":"/bin/sleep"}}`
	j, changed, err := c.SubmitJob(ctx, []byte(spec))
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "web", j.Name)
	require.EqualValues(t, 1, j.Version)
	require.Equal(t, map[string]int{"running": 2}, j.Allocations)
	require.Equal(t, time.Date(2026, 3, 1, 10, 0, 0, 123e6, time.UTC), j.SubmittedAt)
	require.Len(t, j.Events, 1)
	require.Equal(t, "submitted version 1", j.Events[0].Message)
	require.False(t, j.Events[0].At.IsZero())
	require.JSONEq(t, `{"name":"web","type":"service","count":2,"task":{"command":"/bin/sleep"}}`, string(j.Spec))
	req, body := f.last()
	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "/v1/jobs", req.URL.Path)
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.Equal(t, spec, body)

	_, changed, err = c.SubmitJob(ctx, []byte(spec))
	require.NoError(t, err)
	require.False(t, changed, "the same spec again changes nothing")

	yaml := "name: batch1\ntype: batch\ntask:\n  command: /bin/true\n"
	j, changed, err = c.SubmitJob(ctx, []byte(yaml))
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "batch1", j.Name)
	req, _ = f.last()
	require.Equal(t, "application/yaml", req.Header.Get("Content-Type"))
}

func TestSubmitJobInvalidSpec(t *testing.T) {
	f := newJobsFake(t)
	c := newTestClient(t, Config{Endpoints: []string{f.srv.URL}})
	_, _, err := c.SubmitJob(context.Background(), []byte("name: x\ncount: -1\n"))
	require.Error(t, err)
	var se *SpecError
	require.ErrorAs(t, err, &se)
	require.Equal(t, []FieldError{{Field: "count", Problem: "must be at least 1"}, {Field: "task.command", Problem: "missing"}}, se.Fields)
	require.ErrorIs(t, err, ErrInvalidSpec)
	require.NotErrorIs(t, err, ErrBadRequest)
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
	require.Equal(t, "invalid job spec: count: must be at least 1; task.command: missing", err.Error())

	// Other errors of a submission are plain API errors.
	tooLarge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, apiError{status: 413, code: "too_large", msg: "job spec is larger than 262144 bytes"})
	}))
	t.Cleanup(tooLarge.Close)
	c = newTestClient(t, Config{Endpoints: []string{tooLarge.URL}})
	_, _, err = c.SubmitJob(context.Background(), []byte("{}"))
	require.ErrorIs(t, err, ErrTooLarge)
	require.False(t, errors.As(err, &se))
}

func TestSubmitJobFailover(t *testing.T) {
	f := newJobsFake(t)
	// A leaderless controller and an unreachable one: both are safe to skip.
	leaderless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, apiError{status: 503, code: "no_leader", msg: "no leader"})
	}))
	t.Cleanup(leaderless.Close)
	c := newTestClient(t, Config{Endpoints: []string{refusedEndpoint(t), leaderless.URL, f.srv.URL}})
	j, _, err := c.SubmitJob(context.Background(), []byte(`{"name":"web"}`))
	require.NoError(t, err)
	require.Equal(t, "web", j.Name)

	// A timeout may still commit: it is not resent elsewhere.
	var hits int
	var mu sync.Mutex
	timeout := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		writeErr(w, apiError{status: 503, code: "timeout", msg: "proposal timed out"})
	}))
	t.Cleanup(timeout.Close)
	c = newTestClient(t, Config{Endpoints: []string{timeout.URL, f.srv.URL}})
	_, _, err = c.SubmitJob(context.Background(), []byte(`{"name":"web2"}`))
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, 1, hits)

	// With every endpoint leaderless the client retries until its timeout.
	c = newTestClient(t, Config{Endpoints: []string{leaderless.URL}, Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, _, err = c.SubmitJob(context.Background(), []byte(`{"name":"web"}`))
	require.ErrorIs(t, err, ErrNoLeader)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
}

func TestJobReads(t *testing.T) {
	f := newJobsFake(t)
	c := newTestClient(t, Config{Endpoints: []string{f.srv.URL}})
	ctx := context.Background()
	_, _, err := c.SubmitJob(ctx, []byte(`{"name":"web"}`))
	require.NoError(t, err)

	jobs, err := c.Jobs(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "running", jobs[0].Status)
	require.Nil(t, jobs[0].Spec)

	j, allocs, err := c.Job(ctx, "web")
	require.NoError(t, err)
	require.Equal(t, "web", j.Name)
	require.NotEmpty(t, j.Spec)
	require.Len(t, allocs, 1)
	require.Equal(t, Allocation{ID: "a1", Job: "web", JobVersion: 1, Worker: "w-1", Epoch: 2, State: "running", Desired: "run",
		CreatedAt: time.Date(2026, 3, 1, 10, 0, 0, 123e6, time.UTC), StartedAt: time.Date(2026, 3, 1, 10, 0, 0, 123e6, time.UTC)}, allocs[0])

	_, _, err = c.Job(ctx, "nope")
	require.ErrorIs(t, err, ErrJobNotFound)
	require.NotErrorIs(t, err, ErrNotFound)
	_, _, err = c.Job(ctx, "")
	require.ErrorContains(t, err, "empty job name")

	// Names are path-escaped, dots included.
	_, _, err = c.Job(ctx, "..")
	require.ErrorIs(t, err, ErrJobNotFound)
	req, _ := f.last()
	require.Equal(t, "/v1/jobs/%2E%2E", req.URL.RawPath)

	j, err = c.StopJob(ctx, "web")
	require.NoError(t, err)
	require.Equal(t, "stopping", j.Status)
	req, _ = f.last()
	require.Equal(t, http.MethodDelete, req.Method)
	require.Equal(t, "/v1/jobs/web", req.URL.Path)
	_, err = c.StopJob(ctx, "nope")
	require.ErrorIs(t, err, ErrJobNotFound)
}

func TestAllocationCalls(t *testing.T) {
	f := newJobsFake(t)
	c := newTestClient(t, Config{Endpoints: []string{f.srv.URL}})
	ctx := context.Background()

	as, err := c.Allocations(ctx, "web", "")
	require.NoError(t, err)
	require.Len(t, as, 2)
	req, _ := f.last()
	require.Equal(t, "job=web", req.URL.RawQuery)

	_, err = c.FilterAllocations(ctx, AllocFilter{Job: "web", Worker: "w 1", State: "running"})
	require.NoError(t, err)
	req, _ = f.last()
	require.Equal(t, "job=web&state=running&worker=w+1", req.URL.RawQuery)
	_, err = c.Allocations(ctx, "", "")
	require.NoError(t, err)
	req, _ = f.last()
	require.Empty(t, req.URL.RawQuery)

	a, err := c.Allocation(ctx, "a1")
	require.NoError(t, err)
	require.Len(t, a.History, 2)
	require.Equal(t, "pending", a.History[0].State)
	require.False(t, a.History[0].At.IsZero())
	require.True(t, a.History[1].At.IsZero(), "an empty time decodes as zero")
	require.Equal(t, "started", a.History[1].Message)
	require.Nil(t, a.ExitCode)
	_, err = c.Allocation(ctx, "zz")
	require.ErrorIs(t, err, ErrAllocNotFound)

	a, err = c.RestartAlloc(ctx, "a1")
	require.NoError(t, err)
	require.Equal(t, "a1", a.ID)
	req, _ = f.last()
	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "/v1/allocations/a1/restart", req.URL.Path)
	_, err = c.RestartAlloc(ctx, "done")
	require.ErrorIs(t, err, ErrNotRunning)

	d, err := c.DrainWorker(ctx, "w-1", true)
	require.NoError(t, err)
	require.Equal(t, WorkerDrain{Worker: "w-1", State: "draining", Drain: true}, d)
	_, body := f.last()
	require.JSONEq(t, `{"drain":true}`, body)
	d, err = c.DrainWorker(ctx, "w-1", false)
	require.NoError(t, err)
	require.Equal(t, WorkerDrain{Worker: "w-1", State: "alive"}, d)
	_, body = f.last()
	require.JSONEq(t, `{"drain":false}`, body)
	_, err = c.DrainWorker(ctx, "ghost", true)
	require.ErrorIs(t, err, ErrWorkerNotFound)
}

func TestAllocLogs(t *testing.T) {
	f := newJobsFake(t)
	f.logChunks = []string{"line 1\n", "line 2\n"}
	c := newTestClient(t, Config{Endpoints: []string{f.srv.URL}})
	ctx := context.Background()

	r, err := c.AllocLogs(ctx, "a1", "", false, -1)
	require.NoError(t, err)
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, "line 1\nline 2\n", string(b))
	req, _ := f.last()
	require.Equal(t, "/v1/allocations/a1/logs", req.URL.Path)
	require.Equal(t, "stream=stdout", req.URL.RawQuery)

	r, err = c.AllocLogs(ctx, "a1", "stderr", false, 0)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	req, _ = f.last()
	require.Equal(t, "stream=stderr&tail=0", req.URL.RawQuery)

	_, err = c.AllocLogs(ctx, "a1", "stdin", false, -1)
	require.ErrorContains(t, err, "stdout or stderr")
	_, err = c.AllocLogs(ctx, "gone", "", false, -1)
	require.ErrorIs(t, err, ErrLogUnavailable)
}

// TestAllocLogsFollowOutlivesTimeout: the client timeout bounds the wait for the answer, not a followed stream;
// the caller's context ends it.
func TestAllocLogsFollowOutlivesTimeout(t *testing.T) {
	f := newJobsFake(t)
	f.logChunks = []string{"first\n", "second\n"}
	f.logChunkGap = 300 * time.Millisecond
	c := newTestClient(t, Config{Endpoints: []string{f.srv.URL}, Timeout: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	r, err := c.AllocLogs(ctx, "a1", "stdout", true, 10)
	require.NoError(t, err)
	defer r.Close()
	req, _ := f.last()
	require.Equal(t, "follow=true&stream=stdout&tail=10", req.URL.RawQuery)
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "first\n", line)
	line, err = br.ReadString('\n') // arrives after 3x the client timeout
	require.NoError(t, err)
	require.Equal(t, "second\n", line)

	done := make(chan error, 1)
	go func() {
		_, err := br.ReadString('\n')
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the context did not end the followed stream")
	}
}

func TestAllocLogsNoAnswer(t *testing.T) {
	f := newJobsFake(t)
	f.logHeaderDelay = 5 * time.Second
	c := newTestClient(t, Config{Endpoints: []string{f.srv.URL}, Timeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := c.AllocLogs(context.Background(), "a1", "", true, -1)
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorContains(t, err, "no answer within 100ms")
	require.Less(t, time.Since(start), 3*time.Second)

	// The caller's own cancellation is reported as such.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c = newTestClient(t, Config{Endpoints: []string{f.srv.URL}, Timeout: time.Minute})
	_, err = c.AllocLogs(ctx, "a1", "", true, -1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrTimeout)
}
