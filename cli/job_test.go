package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

// runStdin is run with standard input.
func runStdin(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	app := App()
	var out, errOut bytes.Buffer
	app.Reader, app.Writer, app.ErrWriter = strings.NewReader(stdin), &out, &errOut
	err := app.Run(append([]string{"corral"}, args...))
	return out.String(), errOut.String(), err
}

// jobsAPI imitates the jobs part of the HTTP API (roles/http_jobs.go) with canned answers, recording the
// requests it gets.
type jobsAPI struct {
	url string

	mu     sync.Mutex
	specs  map[string]string
	reqs   []*http.Request
	bodies []string
	logs   map[string]string // "ID/stream" -> text
}

var (
	// jobsNow is a fixed "now" for the canned answers: allocation ages are shown relative to the real clock.
	jobsNow  = time.Now().Add(-90 * time.Second).UTC()
	jobsTime = jobsNow.Format(time.RFC3339Nano)
)

func newJobsAPI(t *testing.T) *jobsAPI {
	t.Helper()
	f := &jobsAPI{specs: map[string]string{}, logs: map[string]string{
		"a1/stdout": "hello\nworld\n", "a1/stderr": "oops\n",
	}}
	errJSON := func(w http.ResponseWriter, status int, code, msg string) {
		writeJSON(w, status, map[string]any{"error": msg, "code": code})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s := string(body)
		if strings.Contains(s, "count: -1") {
			writeJSON(w, 400, map[string]any{"error": "invalid job spec: ...", "code": "invalid_spec", "fields": []map[string]string{
				{"field": "count", "problem": "must be at least 1"}, {"field": "task.command", "problem": "missing; give the program to run"}}})
			return
		}
		name := "web"
		if strings.Contains(s, "batch1") {
			name = "batch1"
		}
		f.mu.Lock()
		changed := f.specs[name] != s
		f.specs[name] = s
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"job": jobAnswer(name, true), "changed": changed})
	})
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"jobs": []any{jobAnswer("web", false), jobAnswer("batch1", false)}})
	})
	mux.HandleFunc("GET /v1/jobs/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "web" {
			errJSON(w, 404, "job_not_found", "job not found")
			return
		}
		writeJSON(w, 200, map[string]any{"job": jobAnswer("web", true), "allocations": []any{
			allocAnswer("a1", "running", nil, false), allocAnswer("a2", "failed", 3, false)}})
	})
	mux.HandleFunc("DELETE /v1/jobs/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "web" {
			errJSON(w, 404, "job_not_found", "job not found")
			return
		}
		j := jobAnswer("web", true)
		j["status"] = "stopping"
		writeJSON(w, 200, map[string]any{"job": j})
	})
	mux.HandleFunc("GET /v1/allocations", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"allocations": []any{allocAnswer("a1", "running", nil, false), allocAnswer("a2", "failed", 3, false)}})
	})
	mux.HandleFunc("GET /v1/allocations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "a1" {
			errJSON(w, 404, "allocation_not_found", "allocation not found")
			return
		}
		writeJSON(w, 200, map[string]any{"allocation": allocAnswer("a1", "running", nil, true)})
	})
	mux.HandleFunc("POST /v1/allocations/{id}/restart", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("id") {
		case "a1":
			writeJSON(w, 200, map[string]any{"allocation": allocAnswer("a1", "running", nil, true)})
		case "a2":
			errJSON(w, 409, "not_running", `allocation "a2" is failed, not running`)
		default:
			errJSON(w, 404, "allocation_not_found", "allocation not found")
		}
	})
	mux.HandleFunc("GET /v1/allocations/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if id == "gone" {
			errJSON(w, 404, "log_unavailable", "worker w-9 is not connected")
			return
		}
		text, ok := f.logs[id+"/"+r.URL.Query().Get("stream")]
		if !ok {
			errJSON(w, 404, "allocation_not_found", "allocation not found")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, text)
	})
	mux.HandleFunc("POST /v1/workers/{id}/drain", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Drain bool `json:"drain"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch r.PathValue("id") {
		case "ghost":
			errJSON(w, 404, "worker_not_found", "worker not found")
		case "away":
			writeJSON(w, 200, map[string]any{"worker": "away", "state": "fenced", "drain": req.Drain})
		default:
			writeJSON(w, 200, map[string]any{"worker": r.PathValue("id"), "state": map[bool]string{true: "draining", false: "alive"}[req.Drain], "drain": req.Drain})
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Clone(r.Context()))
		f.bodies = append(f.bodies, string(body))
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *jobsAPI) last() (*http.Request, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1], f.bodies[len(f.bodies)-1]
}

func jobAnswer(name string, detail bool) map[string]any {
	j := map[string]any{"name": name, "type": "service", "status": "pending", "version": 2, "count": 3,
		"allocations": map[string]int{"running": 1, "starting": 1, "failed": 1}, "unplaced": 1,
		"reason": "no worker has 500m CPU free", "submitted_at": jobsTime, "evaluation_pending": false}
	if name == "batch1" {
		j = map[string]any{"name": name, "type": "batch", "status": "complete", "version": 1, "count": 1,
			"allocations": map[string]int{"exited": 1}, "unplaced": 0, "submitted_at": jobsTime, "evaluation_pending": false}
	}
	if detail {
		j["spec"] = map[string]any{"name": name, "type": "service", "count": 3, "placement": "spread",
			"task": map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo hi; sleep 600"},
				"resources": map[string]any{"cpu_millis": 500, "memory_mb": 64}},
			"constraints": []map[string]any{{"label": "zone", "operator": "=", "value": "a"}},
			"restart":     map[string]any{"attempts": 3, "delay": "5s", "backoff": 2, "max_delay": "1m0s"}}
		j["events"] = []map[string]any{{"at": jobsTime, "message": "submitted version 2"}, {"at": jobsTime, "message": "1 allocation unplaced: no worker has 500m CPU free"}}
	}
	return j
}

func allocAnswer(id, state string, exit any, history bool) map[string]any {
	a := map[string]any{"id": id, "job": "web", "job_version": 2, "worker": "w-1", "epoch": 4, "state": state,
		"desired": "run", "exit_code": exit, "restarts": 1, "created_at": jobsTime, "started_at": jobsTime}
	if history {
		a["message"] = "restarted on request"
		a["history"] = []map[string]any{{"state": "pending", "at": jobsTime}, {"state": "running", "at": jobsTime, "message": "started pid 42"}}
	}
	return a
}

// tableRows splits a table's output into rows of whitespace-separated fields.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func TestJobRun(t *testing.T) {
	f := newJobsAPI(t)
	ep := "--endpoints=" + f.url
	dir := t.TempDir()
	file := filepath.Join(dir, "web.json")
	spec := `{"name":"web","task":{"command":"/bin/sh"}}`
	require.NoError(t, os.WriteFile(file, []byte(spec), 0o600))

	out, _, err := run(t, "job", "run", ep, file)
	require.NoError(t, err)
	require.Equal(t, "job web version 2 submitted\n", out)
	_, body := f.last()
	require.Equal(t, spec, body)

	out, _, err = run(t, "job", "run", ep, file)
	require.NoError(t, err)
	require.Equal(t, "job web version 2 unchanged\n", out)

	// YAML from standard input.
	out, _, err = runStdin(t, "name: batch1\ntype: batch\n", "job", "run", ep, "-")
	require.NoError(t, err)
	require.Equal(t, "job batch1 version 1 submitted\n", out)
	req, body := f.last()
	require.Equal(t, "application/yaml", req.Header.Get("Content-Type"))
	require.Equal(t, "name: batch1\ntype: batch\n", body)
	_, errOut, err := runStdin(t, "name: x\ncount: -1\n", "job", "run", ep, "-")
	require.ErrorContains(t, err, "the job spec on standard input is invalid (2 problem(s) listed above)")
	require.Contains(t, errOut, "count: must be at least 1\n")

	// An invalid spec: one "field: problem" line per field on stderr, exit 1.
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: x\ncount: -1\n"), 0o600))
	out, errOut, err = run(t, "job", "run", ep, bad)
	require.Error(t, err)
	require.Empty(t, out)
	require.Equal(t, "count: must be at least 1\ntask.command: missing; give the program to run\n", errOut)
	require.ErrorContains(t, err, "job spec "+bad+" is invalid (2 problem(s) listed above)")

	_, _, err = run(t, "job", "run", ep, filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "read job spec")
	require.ErrorContains(t, err, "no such file")

	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("#"), 300<<10), 0o600))
	_, _, err = run(t, "job", "run", ep, big)
	require.ErrorContains(t, err, "larger than the 256 KiB limit")

	_, _, err = run(t, "job", "run", "--endpoints", "http://127.0.0.1:1", file)
	require.ErrorContains(t, err, "is a controller running there?")
}

func TestJobList(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "job", "list", "--endpoints", f.url)
	require.NoError(t, err)
	rows := tableRows(out)
	require.Len(t, rows, 3, out)
	require.Equal(t, []string{"NAME", "TYPE", "STATUS", "VERSION", "COUNT", "RUNNING", "PENDING", "REASON"}, rows[0])
	// Sorted by name; PENDING counts starting allocations and unplaced instances.
	require.Equal(t, []string{"batch1", "batch", "complete", "1", "1", "0", "0", "-"}, rows[1])
	require.Equal(t, []string{"web", "service", "pending", "2", "3", "1", "2", "no", "worker", "has", "500m", "CPU", "free"}, rows[2])

	out, _, err = run(t, "job", "ls", "--endpoints", f.url, "--json")
	require.NoError(t, err)
	var answer struct {
		Jobs []map[string]any `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &answer))
	require.Len(t, answer.Jobs, 2)
	require.Equal(t, "batch1", answer.Jobs[0]["name"])
	require.Equal(t, jobsTime, answer.Jobs[0]["submitted_at"])

	_, _, err = run(t, "job", "list", "--endpoints", f.url, "extra")
	require.ErrorContains(t, err, "takes no arguments")
}

func TestJobStatus(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "job", "status", "--endpoints", f.url, "web")
	require.NoError(t, err)
	for _, want := range []string{
		"name:      web\n",
		"status:    pending\n",
		"version:   2, submitted " + jobsNow.Local().Format("2006-01-02 15:04:05 MST") + " (1m ago)\n",
		"count:     3 (1 running, 1 starting, 1 failed)\n",
		`task:      /bin/sh -c "echo hi; sleep 600"` + "\n",
		"resources: cpu 500m, memory 64 MB\n",
		"placement: spread; constraints: zone = a\n",
		"restart:   3 attempt(s), delay 5s x2 per attempt, at most 1m0s\n",
		"unplaced:  1\n",
		"reason:    no worker has 500m CPU free\n",
		"Recent events:\n",
		"submitted version 2\n",
		"1 allocation unplaced: no worker has 500m CPU free\n",
		"\nAllocations:\n",
	} {
		require.Contains(t, out, want)
	}
	_, allocTable, ok := strings.Cut(out, "Allocations:\n")
	require.True(t, ok)
	rows := tableRows(allocTable)
	require.Len(t, rows, 3, out)
	require.Equal(t, []string{"ID", "WORKER", "EPOCH", "STATE", "DESIRED", "EXIT", "RESTARTS", "AGE"}, rows[0])
	require.Equal(t, []string{"a1", "w-1", "4", "running", "run", "-", "1"}, rows[1][:7])
	require.Regexp(t, `^1m$`, rows[1][7], "created 90s ago")
	require.Equal(t, []string{"a2", "w-1", "4", "failed", "run", "3", "1"}, rows[2][:7])

	out, _, err = run(t, "job", "status", "--endpoints", f.url, "--json", "web")
	require.NoError(t, err)
	var answer struct {
		Job struct {
			Name string          `json:"name"`
			Spec json.RawMessage `json:"spec"`
		} `json:"job"`
		Allocations []map[string]any `json:"allocations"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &answer))
	require.Equal(t, "web", answer.Job.Name)
	var spec struct {
		Task struct {
			Command string `json:"command"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal(answer.Job.Spec, &spec))
	require.Equal(t, "/bin/sh", spec.Task.Command)
	require.Len(t, answer.Allocations, 2)

	_, _, err = run(t, "job", "status", "--endpoints", f.url, "nope")
	require.EqualError(t, err, "job nope not found; list the jobs with 'corral job list --endpoints "+f.url+"'")
	_, _, err = run(t, "job", "status", "--endpoints", f.url)
	require.ErrorContains(t, err, "usage: corral job status [flags] NAME")
}

func TestJobStop(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "job", "stop", "--endpoints", f.url, "web")
	require.NoError(t, err)
	require.Equal(t, "job web stopping; follow it with 'corral job status --endpoints "+f.url+" web'\n", out)
	req, _ := f.last()
	require.Equal(t, http.MethodDelete, req.Method)
	_, _, err = run(t, "job", "stop", "--endpoints", f.url, "nope")
	require.ErrorContains(t, err, "job nope not found")
}

func TestAllocList(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "alloc", "list", "--endpoints", f.url, "--job", "web", "--worker", "w-1", "--state", "running")
	require.NoError(t, err)
	req, _ := f.last()
	require.Equal(t, "job=web&state=running&worker=w-1", req.URL.RawQuery)
	rows := tableRows(out)
	require.Len(t, rows, 3, out)
	require.Equal(t, []string{"ID", "JOB", "VERSION", "WORKER", "EPOCH", "STATE", "DESIRED", "EXIT", "RESTARTS", "AGE"}, rows[0])
	require.Equal(t, []string{"a1", "web", "2", "w-1", "4", "running", "run", "-", "1", "1m"}, rows[1])
	require.Equal(t, []string{"a2", "web", "2", "w-1", "4", "failed", "run", "3", "1", "1m"}, rows[2])

	out, _, err = run(t, "alloc", "ls", "--endpoints", f.url, "--json")
	require.NoError(t, err)
	req, _ = f.last()
	require.Empty(t, req.URL.RawQuery)
	var answer struct {
		Allocations []map[string]any `json:"allocations"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &answer))
	require.Len(t, answer.Allocations, 2)
	require.EqualValues(t, 3, answer.Allocations[1]["exit_code"])
	require.Nil(t, answer.Allocations[0]["exit_code"])
}

func TestAllocStatus(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "alloc", "status", "--endpoints", f.url, "a1")
	require.NoError(t, err)
	for _, want := range []string{
		"id:        a1\n",
		"job:       web (version 2)\n",
		"worker:    w-1 (epoch 4)\n",
		"state:     running (desired run)\n",
		"exit code: -\n",
		"restarts:  1\n",
		"message:   restarted on request\n",
		"created:   " + jobsNow.Local().Format("2006-01-02 15:04:05 MST") + " (1m ago)\n",
		"ended:     -\n",
		"\nHistory:\n",
	} {
		require.Contains(t, out, want)
	}
	_, history, _ := strings.Cut(out, "History:\n")
	lines := strings.Split(strings.TrimRight(history, "\n"), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], "pending")
	require.True(t, strings.HasSuffix(lines[1], "running  started pid 42"), lines[1])

	out, _, err = run(t, "alloc", "status", "--endpoints", f.url, "--json", "a1")
	require.NoError(t, err)
	require.Contains(t, out, `"history": [`)

	_, _, err = run(t, "alloc", "status", "--endpoints", f.url, "zz")
	require.EqualError(t, err, "allocation zz not found; list them with 'corral alloc list --endpoints "+f.url+
		"' or 'corral job status --endpoints "+f.url+" JOB'")
}

func TestAllocLogs(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "alloc", "logs", "--endpoints", f.url, "a1")
	require.NoError(t, err)
	require.Equal(t, "hello\nworld\n", out)
	req, _ := f.last()
	require.Equal(t, "stream=stdout", req.URL.RawQuery)

	out, _, err = run(t, "alloc", "logs", "--endpoints", f.url, "-f", "--stderr", "--tail", "5", "a1")
	require.NoError(t, err)
	require.Equal(t, "oops\n", out)
	req, _ = f.last()
	require.Equal(t, "follow=true&stream=stderr&tail=5", req.URL.RawQuery)

	_, _, err = run(t, "alloc", "logs", "--endpoints", f.url, "--tail", "-3", "a1")
	require.ErrorContains(t, err, "--tail must be a number of lines between 0 and 100000")
	_, _, err = run(t, "alloc", "logs", "--endpoints", f.url, "gone")
	require.ErrorContains(t, err, "logs of allocation gone are unavailable")
	require.ErrorContains(t, err, "worker w-9 is not connected")
	_, _, err = run(t, "alloc", "logs", "--endpoints", f.url, "zz")
	require.ErrorContains(t, err, "allocation zz not found")
}

// TestAllocLogsFollowStreams checks that output is written as it arrives, not when the stream ends.
func TestAllocLogsFollowStreams(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "second\n")
	}))
	t.Cleanup(srv.Close)

	pr, pw := io.Pipe()
	app := App()
	app.Writer, app.ErrWriter = pw, io.Discard
	done := make(chan error, 1)
	go func() {
		done <- app.Run([]string{"corral", "alloc", "logs", "--endpoints", srv.URL, "--timeout", "100ms", "--follow", "a1"})
		pw.Close()
	}()
	buf := make([]byte, 64)
	n, err := pr.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "first\n", string(buf[:n]))
	time.Sleep(200 * time.Millisecond) // longer than --timeout: the stream must not be cut
	close(release)
	rest, err := io.ReadAll(pr)
	require.NoError(t, err)
	require.Equal(t, "second\n", string(rest))
	require.NoError(t, <-done)
}

func TestAllocRestart(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "alloc", "restart", "--endpoints", f.url, "a1")
	require.NoError(t, err)
	require.Equal(t, "allocation a1 restart requested on worker w-1; watch it with 'corral alloc status --endpoints "+f.url+" a1'\n", out)
	req, _ := f.last()
	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "/v1/allocations/a1/restart", req.URL.Path)

	_, _, err = run(t, "alloc", "restart", "--endpoints", f.url, "a2")
	require.EqualError(t, err, `cannot restart allocation a2: allocation "a2" is failed, not running (only a running allocation restarts; to run a stopped job again use 'corral job run --endpoints `+f.url+` FILE')`)
	_, _, err = run(t, "alloc", "restart", "--endpoints", f.url, "zz")
	require.ErrorContains(t, err, "allocation zz not found")
}

func TestWorkerDrain(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "worker", "drain", "--endpoints", f.url, "w-1")
	require.NoError(t, err)
	require.Equal(t, "worker w-1 is draining: it gets no new allocations and its services move to other workers "+
		"(undo with 'corral worker drain --undo --endpoints "+f.url+" w-1')\n", out)
	req, body := f.last()
	require.Equal(t, "/v1/workers/w-1/drain", req.URL.Path)
	require.JSONEq(t, `{"drain":true}`, body)

	out, _, err = run(t, "worker", "drain", "--endpoints", f.url, "--undo", "w-1")
	require.NoError(t, err)
	require.Equal(t, "worker w-1 is no longer draining (state alive)\n", out)
	_, body = f.last()
	require.JSONEq(t, `{"drain":false}`, body)

	out, _, err = run(t, "worker", "drain", "--endpoints", f.url, "away")
	require.NoError(t, err)
	require.Contains(t, out, "worker away is fenced; it will drain if it comes back")

	_, _, err = run(t, "worker", "drain", "--endpoints", f.url, "ghost")
	require.EqualError(t, err, "worker ghost not found; list the workers with 'corral worker list --endpoints "+f.url+"'")
	_, _, err = run(t, "worker", "drain", "--endpoints", f.url)
	require.ErrorContains(t, err, "usage: corral worker drain [flags] ID")
}

func TestJobAllocUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"job"}, "missing command after 'corral job'; use one of: run, list, status, stop"},
		{[]string{"job", "frob"}, "unknown command 'corral job frob'"},
		{[]string{"alloc"}, "missing command after 'corral alloc'; use one of: list, status, logs, restart"},
		{[]string{"job", "run"}, "usage: corral job run [flags] FILE"},
		{[]string{"job", "stop", "a", "b"}, "takes 1 argument(s), got 2"},
		{[]string{"alloc", "logs"}, "usage: corral alloc logs [flags] ID"},
		{[]string{"alloc", "restart"}, "takes 1 argument(s), got 0"},
		{[]string{"alloc", "list", "x"}, "takes no arguments"},
		{[]string{"job", "list", "--endpoints", " "}, "--endpoints is empty"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := run(t, tt.args...)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestFormatShortAge(t *testing.T) {
	now := time.Now()
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 12*time.Minute + 5*time.Second: "12m", 5*time.Hour + 3*time.Minute: "5h3m",
		2 * time.Hour: "2h", 9*24*time.Hour + time.Hour: "9d",
	} {
		require.Equal(t, want, formatShortAge(now.Add(-d), now), d)
	}
	require.Equal(t, "-", formatShortAge(time.Time{}, now))
}

// TestJobCommandsAgainstController runs the commands against a real one-node controller (no workers), so the
// client and the API agree on shapes and error codes.
func TestJobCommandsAgainstController(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a controller")
	}
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1", "localhost"}))
	ctrl, err := roles.StartController(roles.ControllerConfig{
		NodeID: 1, DataDir: filepath.Join(dir, "data"), ClusterAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Peers: map[uint64]string{1: "127.0.0.1:0"}, TLSDir: tlsDir,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctrl.Close() })
	ep := "--endpoints=http://" + ctrl.HTTPAddr()
	require.Eventually(t, func() bool {
		_, _, err := run(t, "job", "list", ep)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "controller never served the API")

	spec := filepath.Join(dir, "web.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: web\ncount: 2\ntask:\n  command: /bin/sleep\n  args: [\"600\"]\n"), 0o600))
	out, _, err := run(t, "job", "run", ep, spec)
	require.NoError(t, err)
	require.Equal(t, "job web version 1 submitted\n", out)
	out, _, err = run(t, "job", "run", ep, spec)
	require.NoError(t, err)
	require.Equal(t, "job web version 1 unchanged\n", out)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"name":"x","count":-1,"task":{}}`), 0o600))
	_, errOut, err := run(t, "job", "run", ep, bad)
	require.ErrorContains(t, err, "is invalid")
	require.Contains(t, errOut, "count: ")
	require.Contains(t, errOut, "task.command: ")

	out, _, err = run(t, "job", "list", ep)
	require.NoError(t, err)
	rows := tableRows(out)
	require.Len(t, rows, 2, out)
	require.Equal(t, []string{"web", "service", "pending", "1", "2", "0"}, rows[1][:6])

	out, _, err = run(t, "job", "status", ep, "web")
	require.NoError(t, err)
	require.Contains(t, out, "task:      /bin/sleep 600\n")
	require.Contains(t, out, "Recent events:")

	out, _, err = run(t, "alloc", "list", ep, "--job", "web")
	require.NoError(t, err)
	require.Contains(t, out, "(no allocations)")

	_, _, err = run(t, "job", "status", ep, "nope")
	require.ErrorContains(t, err, "job nope not found")
	_, _, err = run(t, "alloc", "status", ep, "nope")
	require.ErrorContains(t, err, "allocation nope not found")
	_, _, err = run(t, "alloc", "restart", ep, "nope")
	require.ErrorContains(t, err, "allocation nope not found")
	_, _, err = run(t, "worker", "drain", ep, "ghost")
	require.ErrorContains(t, err, "worker ghost not found")

	out, _, err = run(t, "job", "stop", ep, "web")
	require.NoError(t, err)
	require.Contains(t, out, "job web stop")
	_, _, err = run(t, "job", "stop", ep, "nope")
	require.ErrorContains(t, err, "job nope not found")
}

// TestHintsKeepTheEndpoints: a hint repeats the connection flags given on the command line, so that it works as
// printed, but neither those that come from the environment (still set there) nor --token (a secret).
func TestHintsKeepTheEndpoints(t *testing.T) {
	f := newJobsAPI(t)
	out, _, err := run(t, "job", "stop", "--endpoints", f.url, "--token", "s3cret", "web")
	require.NoError(t, err)
	require.Equal(t, "job web stopping; follow it with 'corral job status --endpoints "+f.url+" web'\n", out)

	cfg := writeConfig(t, "endpoints: "+f.url+"\n")
	out, _, err = run(t, "--config", cfg, "job", "stop", "web")
	require.NoError(t, err)
	require.Equal(t, "job web stopping; follow it with 'corral --config "+cfg+" job status web'\n", out)

	t.Setenv("CORRAL_ENDPOINTS", f.url)
	out, _, err = run(t, "job", "stop", "web")
	require.NoError(t, err)
	require.Equal(t, "job web stopping; follow it with 'corral job status web'\n", out)

	require.Equal(t, "'a b'", shellQuote("a b"))
	require.Equal(t, `'it'\''s'`, shellQuote("it's"))
	require.Equal(t, "http://127.0.0.1:8080,http://h:1", shellQuote("http://127.0.0.1:8080,http://h:1"))
}

// TestAllocIDPrefixes: a unique prefix names its allocation in status, logs and restart; an ambiguous one lists
// the candidates.
func TestAllocIDPrefixes(t *testing.T) {
	ids := []string{"abc123", "abd456"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/allocations", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"allocations": []any{allocAnswer(ids[0], "running", nil, false), allocAnswer(ids[1], "failed", 3, false)}})
	})
	exact := func(w http.ResponseWriter, r *http.Request) bool {
		if id := r.PathValue("id"); id != ids[0] && id != ids[1] {
			writeJSON(w, 404, map[string]any{"error": "allocation not found", "code": "allocation_not_found"})
			return false
		}
		return true
	}
	mux.HandleFunc("GET /v1/allocations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if exact(w, r) {
			writeJSON(w, 200, map[string]any{"allocation": allocAnswer(r.PathValue("id"), "running", nil, true)})
		}
	})
	mux.HandleFunc("POST /v1/allocations/{id}/restart", func(w http.ResponseWriter, r *http.Request) {
		if exact(w, r) {
			writeJSON(w, 200, map[string]any{"allocation": allocAnswer(r.PathValue("id"), "running", nil, true)})
		}
	})
	mux.HandleFunc("GET /v1/allocations/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		if exact(w, r) {
			_, _ = io.WriteString(w, "log of "+r.PathValue("id")+"\n")
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ep := "--endpoints=" + srv.URL

	out, _, err := run(t, "alloc", "status", ep, "-o", "json", "abc")
	require.NoError(t, err)
	require.Contains(t, out, `"id": "abc123"`)
	out, _, err = run(t, "alloc", "logs", ep, "abd")
	require.NoError(t, err)
	require.Equal(t, "log of abd456\n", out)
	out, _, err = run(t, "alloc", "restart", ep, "abc1")
	require.NoError(t, err)
	require.Contains(t, out, "allocation abc123 restart requested")

	for _, cmd := range []string{"status", "logs", "restart"} {
		_, _, err = run(t, "alloc", cmd, ep, "ab")
		require.EqualError(t, err, "allocation id prefix ab is ambiguous: 2 allocations start with it; give more of the id:\n"+
			"  abc123 (job web, running)\n  abd456 (job web, failed)", cmd)
	}
	_, _, err = run(t, "alloc", "status", ep, "abx")
	require.ErrorContains(t, err, "allocation abx not found")
}
