package roles

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
	"github.com/corral-dev/corral/roles/worker"
)

// Job tests run controllers and workers in one process over the in-memory
// network, with real tasks under real `corral supervise` processes.

func startJobWorker(t *testing.T, wc *testcluster.Cluster, labels map[string]string) *testcluster.Worker {
	bin := testcluster.CorralBinary(t)
	return wc.StartWorker("", func(cfg *worker.Config) {
		cfg.SupervisorCmd = []string{bin, "supervise"}
		cfg.Labels = labels
		cfg.CPUMillis, cfg.MemoryMB = 4000, 4096
	})
}

// api calls the HTTP API of c in-process and decodes a JSON answer.
func api(t *testing.T, c *controller.Controller, method, path, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	c.Handler().ServeHTTP(rec, req)
	var out map[string]any
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	} else {
		out = map[string]any{"text": rec.Body.String()}
	}
	return rec.Code, out
}

func allocsOf(c *controller.Controller, job string) []metadata.Allocation {
	return c.State().Allocations(job, "")
}

func countState(as []metadata.Allocation, st metadata.AllocState) int {
	n := 0
	for _, a := range as {
		if a.State == st {
			n++
		}
	}
	return n
}

// waitAllocs polls the leader's state until cond holds.
func waitAllocs(t *testing.T, wc *testcluster.Cluster, job string, what string, cond func([]metadata.Allocation) bool) []metadata.Allocation {
	t.Helper()
	var last []metadata.Allocation
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		last = allocsOf(wc.Leader(), job)
		if cond(last) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s: %s never happened; allocations: %+v", job, what, last)
	return nil
}

func TestJobs_BatchRunsToCompletionWithExitCodeAndLogs(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	w := startJobWorker(t, wc, nil)
	wc.WaitAlive(w)
	lead := wc.Leader()
	code, out := api(t, lead, "POST", "/v1/jobs", `{"name":"b","type":"batch","task":{"command":"/bin/sh","args":["-c","echo hello-from-task; exit 0"]}}`)
	require.Equal(t, 200, code, out)
	as := waitAllocs(t, wc, "b", "exited", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocExited) == 1 })
	require.NotNil(t, as[0].ExitCode)
	require.Equal(t, 0, *as[0].ExitCode)
	code, out = api(t, lead, "GET", "/v1/jobs/b", "")
	require.Equal(t, 200, code)
	require.Equal(t, "complete", out["job"].(map[string]any)["status"])
	// Logs after exit, fetched from the worker over its session.
	code, out = api(t, wc.Leader(), "GET", "/v1/allocations/"+as[0].ID+"/logs", "")
	require.Equal(t, 200, code, out)
	require.Contains(t, out["text"], "hello-from-task")

	// Submitting the same spec again changes nothing.
	code, out = api(t, lead, "POST", "/v1/jobs", `{"name":"b","type":"batch","task":{"command":"/bin/sh","args":["-c","echo hello-from-task; exit 0"]}}`)
	require.Equal(t, 200, code)
	require.Equal(t, false, out["changed"])
	require.Len(t, allocsOf(lead, "b"), 1)

	// A failing batch job keeps its exit code.
	code, _ = api(t, lead, "POST", "/v1/jobs", `{"name":"f","type":"batch","reschedule":false,"task":{"command":"/bin/sh","args":["-c","exit 7"]}}`)
	require.Equal(t, 200, code)
	as = waitAllocs(t, wc, "f", "failed", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocFailed) == 1 })
	require.Equal(t, 7, *as[0].ExitCode)
}

func TestJobs_InvalidSpecNamesTheField(t *testing.T) {
	wc := testcluster.New(t, 1, nil)
	lead := wc.Leader()
	code, out := api(t, lead, "POST", "/v1/jobs", `{"name":"x","count":-1,"task":{}}`)
	require.Equal(t, 400, code)
	require.Equal(t, "invalid_spec", out["code"])
	fields := fmt.Sprint(out["fields"])
	require.Contains(t, fields, "count")
	require.Contains(t, fields, "task.command")
	code, _ = api(t, lead, "GET", "/v1/jobs/x", "")
	require.Equal(t, 404, code)
	code, out = api(t, lead, "DELETE", "/v1/jobs/nope", "")
	require.Equal(t, 404, code, out)
	code, _ = api(t, lead, "POST", "/v1/allocations/nope/restart", "")
	require.Equal(t, 404, code)
}

func TestJobs_ServiceSpreadsAndMovesWhenItsWorkerDies(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	ws := []*testcluster.Worker{startJobWorker(t, wc, nil), startJobWorker(t, wc, nil), startJobWorker(t, wc, nil)}
	wc.WaitAlive(ws...)
	lead := wc.Leader()
	code, out := api(t, lead, "POST", "/v1/jobs", `{"name":"s","count":3,"task":{"command":"/bin/sh","args":["-c","exec sleep 600"],"kill_timeout":"1s"}}`)
	require.Equal(t, 200, code, out)
	as := waitAllocs(t, wc, "s", "3 running", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocRunning) == 3 })
	on := map[string]bool{}
	for _, a := range as {
		on[a.Worker] = true
	}
	require.Len(t, on, 3, "spread puts one allocation on each worker")

	victim := ws[0]
	victim.Halt() // crash: no goodbye
	killedAt := time.Now()
	waitAllocs(t, wc, "s", "a replacement running elsewhere", func(as []metadata.Allocation) bool {
		running := 0
		for _, a := range as {
			if a.State == metadata.AllocRunning && a.Worker != victim.ID() {
				running++
			}
		}
		return running == 3
	})
	t.Logf("replacement running %s after the worker died (session timeout %s)", time.Since(killedAt), testcluster.SessionTimeout)
	lost := 0
	for _, a := range allocsOf(wc.Leader(), "s") {
		if a.Worker == victim.ID() {
			require.Equal(t, metadata.AllocLost, a.State)
			lost++
		}
	}
	require.Equal(t, 1, lost)
}

func TestJobs_UnplaceableStaysPendingUntilAMatchingWorkerJoins(t *testing.T) {
	wc := testcluster.New(t, 1, nil)
	w := startJobWorker(t, wc, map[string]string{"zone": "a"})
	wc.WaitAlive(w)
	lead := wc.Leader()
	code, _ := api(t, lead, "POST", "/v1/jobs", `{"name":"c","constraints":[{"label":"zone","operator":"=","value":"b"}],"task":{"command":"/bin/sh","args":["-c","exec sleep 600"]}}`)
	require.Equal(t, 200, code)
	require.Eventually(t, func() bool {
		j, _ := lead.State().Job("c")
		return j.Unplaced == 1 && strings.Contains(j.Reason, "constraints")
	}, 10*time.Second, 20*time.Millisecond)
	_, out := api(t, lead, "GET", "/v1/jobs/c", "")
	require.Equal(t, "pending", out["job"].(map[string]any)["status"])
	require.Contains(t, out["job"].(map[string]any)["reason"], "constraints")

	w2 := startJobWorker(t, wc, map[string]string{"zone": "b"})
	wc.WaitAlive(w2)
	as := waitAllocs(t, wc, "c", "placed on the new worker", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocRunning) == 1 })
	require.Equal(t, w2.ID(), as[0].Worker)
}

func TestJobs_DrainMovesServicesThenUndo(t *testing.T) {
	wc := testcluster.New(t, 1, nil)
	a, b := startJobWorker(t, wc, nil), startJobWorker(t, wc, nil)
	wc.WaitAlive(a, b)
	lead := wc.Leader()
	code, _ := api(t, lead, "POST", "/v1/jobs", `{"name":"d","count":2,"task":{"command":"/bin/sh","args":["-c","exec sleep 600"],"kill_timeout":"1s"}}`)
	require.Equal(t, 200, code)
	waitAllocs(t, wc, "d", "2 running", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocRunning) == 2 })
	code, out := api(t, lead, "POST", "/v1/workers/"+a.ID()+"/drain", `{"drain":true}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, "draining", out["state"])
	waitAllocs(t, wc, "d", "all moved off the drained worker", func(as []metadata.Allocation) bool {
		running := 0
		for _, al := range as {
			if al.Worker == a.ID() && !al.State.Terminal() {
				return false
			}
			if al.State == metadata.AllocRunning {
				running++
			}
		}
		return running == 2
	})
	code, out = api(t, lead, "POST", "/v1/workers/"+a.ID()+"/drain", `{"drain":false}`)
	require.Equal(t, 200, code)
	require.Equal(t, "alive", out["state"])
	code, _ = api(t, lead, "POST", "/v1/workers/"+a.ID()+"/drain", `{"drain":"yes"}`)
	require.Equal(t, 400, code)
}

func TestJobs_RestartStopAndLogsFollow(t *testing.T) {
	wc := testcluster.New(t, 1, nil)
	w := startJobWorker(t, wc, nil)
	wc.WaitAlive(w)
	lead := wc.Leader()
	code, _ := api(t, lead, "POST", "/v1/jobs", `{"name":"r","task":{"command":"/bin/sh","args":["-c","echo started $$; exec sleep 600"],"kill_timeout":"1s"}}`)
	require.Equal(t, 200, code)
	as := waitAllocs(t, wc, "r", "running", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocRunning) == 1 })
	id := as[0].ID
	logged := func() int {
		_, out := api(t, lead, "GET", "/v1/allocations/"+id+"/logs?tail=10", "")
		return strings.Count(fmt.Sprint(out["text"]), "started")
	}
	// Running means started, not that the shell has echoed yet: on a busy
	// machine a restart sent at once killed it before its first line.
	require.Eventually(t, func() bool { return logged() == 1 }, 10*time.Second, 50*time.Millisecond)
	code, out := api(t, lead, "POST", "/v1/allocations/"+id+"/restart", "")
	require.Equal(t, 200, code, out)
	waitAllocs(t, wc, "r", "restarted", func(as []metadata.Allocation) bool {
		return as[0].Restarts == 1 && as[0].State == metadata.AllocRunning
	})
	require.Eventually(t, func() bool { return logged() == 2 }, 10*time.Second, 50*time.Millisecond)

	// A followed log streams until the allocation ends.
	srv := httptest.NewServer(lead.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/allocations/" + id + "/logs?follow=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	code, _ = api(t, lead, "DELETE", "/v1/jobs/r", "")
	require.Equal(t, 200, code)
	body, err := io.ReadAll(resp.Body) // ends when the allocation stopped
	require.NoError(t, err)
	require.Contains(t, string(body), "started")
	waitAllocs(t, wc, "r", "stopped", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocStopped) == 1 })
	_, out = api(t, lead, "GET", "/v1/jobs/r", "")
	require.Equal(t, "stopped", out["job"].(map[string]any)["status"])
}

func TestJobs_ChangedSpecRollsServicesOneAtATime(t *testing.T) {
	wc := testcluster.New(t, 1, nil)
	ws := []*testcluster.Worker{startJobWorker(t, wc, nil), startJobWorker(t, wc, nil), startJobWorker(t, wc, nil)}
	wc.WaitAlive(ws...)
	lead := wc.Leader()
	spec := func(v string) string {
		return `{"name":"roll","count":3,"task":{"command":"/bin/sh","args":["-c","exec sleep 600"],"env":{"V":"` + v + `"},"kill_timeout":"1s"}}`
	}
	code, _ := api(t, lead, "POST", "/v1/jobs", spec("1"))
	require.Equal(t, 200, code)
	waitAllocs(t, wc, "roll", "3 running", func(as []metadata.Allocation) bool { return countState(as, metadata.AllocRunning) == 3 })

	// Watch the rollover: never fewer than 2 allocations serving, never
	// more than one old one being replaced at a time.
	stop := make(chan struct{})
	done := make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- ""
				return
			case <-time.After(5 * time.Millisecond):
			}
			serving, stopping := 0, 0
			for _, a := range allocsOf(lead, "roll") {
				if a.State == metadata.AllocRunning && a.Desired == metadata.DesiredRun {
					serving++
				}
				if a.Desired == metadata.DesiredStop && !a.State.Terminal() {
					stopping++
				}
			}
			if serving < 2 || stopping > 1 {
				done <- fmt.Sprintf("%d serving, %d stopping", serving, stopping)
				return
			}
		}
	}()
	code, out := api(t, lead, "POST", "/v1/jobs", spec("2"))
	require.Equal(t, 200, code)
	require.Equal(t, true, out["changed"])
	waitAllocs(t, wc, "roll", "3 running at version 2", func(as []metadata.Allocation) bool {
		n := 0
		for _, a := range as {
			if a.JobVersion == 2 && a.State == metadata.AllocRunning {
				n++
			} else if a.JobVersion == 1 && !a.State.Terminal() {
				return false
			}
		}
		return n == 3
	})
	close(stop)
	require.Empty(t, <-done, "the rollover was not one at a time")
	require.Equal(t, 3, countState(allocsOf(lead, "roll"), metadata.AllocStopped))
}
