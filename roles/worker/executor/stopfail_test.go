package executor

import (
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// A worker without CAP_KILL cannot signal a task running as another user:
// the supervisor must say so and keep waiting, never report an exit while
// the task lives.
func TestSupervisor_KillFailureIsReportedNotTakenForAStop(t *testing.T) {
	var permitted atomic.Bool
	h := startSupervised(t, "sleep 300", func(c *SupervisorConfig) {
		c.KillTimeout = 100 * time.Millisecond
		c.Signal = func(pid int, sig syscall.Signal) error {
			if !permitted.Load() {
				return syscall.EPERM
			}
			return syscall.Kill(pid, sig)
		}
	})
	pid, _ := strconv.Atoi(h.event(SupEvStarted))
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	_, err := io.WriteString(h.in, SupStop+"\n")
	require.NoError(t, err)
	reason := h.event(SupEvStopFailed)
	require.Contains(t, reason, "operation not permitted")
	require.Contains(t, reason, "CAP_KILL")
	require.True(t, pidAlive(pid), "the task was refused the signal, so it must still run")
	select {
	case code := <-h.done:
		t.Fatalf("supervisor ended (code %d) while its task still runs", code)
	default:
	}

	// Once the task can be signalled, a new stop ends it and its exit is
	// still reported.
	permitted.Store(true)
	_, err = io.WriteString(h.in, SupStop+"\n")
	require.NoError(t, err)
	h.event(SupEvExited)
	require.False(t, pidAlive(pid))
}

// recordingExecutor is an Executor whose runners can be driven by hand
// (event, next) without any process.
func recordingExecutor(t *testing.T) (*Executor, func() []Report) {
	var mu sync.Mutex
	var reports []Report
	e := &Executor{
		cfg: Config{Report: func(r Report) {
			mu.Lock()
			reports = append(reports, r)
			mu.Unlock()
		}},
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		runners: map[string]*execRunner{}, dying: map[string]*execRunner{},
	}
	return e, func() []Report {
		mu.Lock()
		defer mu.Unlock()
		return append([]Report(nil), reports...)
	}
}

func TestRunner_StopFailureIsNeverReportedStopped(t *testing.T) {
	e, reports := recordingExecutor(t)
	r := &execRunner{e: e, id: "a1", user: "nobody", wake: make(chan struct{}, 1), done: make(chan struct{})}
	out := execOutcome{cause: execReqStop, code: -1}
	reason := "cannot send terminated to the task's process group 42: operation not permitted; give the worker CAP_KILL"
	require.False(t, r.event(SupEvStopFailed+" "+reason, &out))
	require.False(t, r.event(SupEvStopFailed+" "+reason, &out)) // a retry fails again: reported once

	rs := reports()
	require.Len(t, rs, 1)
	require.Equal(t, metadata.AllocRunning, rs[0].State, "the task still runs")
	require.Contains(t, rs[0].Message, "could not stop")
	require.Contains(t, rs[0].Message, "CAP_KILL")

	// The supervisor was given up on before the task exited: failed, with
	// the reason, never stopped.
	require.False(t, r.next(out))
	rs = reports()
	last := rs[len(rs)-1]
	require.Equal(t, metadata.AllocFailed, last.State)
	require.Contains(t, last.Message, "CAP_KILL")

	// The task exited after all (killed by hand): then it is stopped.
	e2, reports2 := recordingExecutor(t)
	r2 := &execRunner{e: e2, id: "a2", user: "nobody", wake: make(chan struct{}, 1), done: make(chan struct{})}
	out2 := execOutcome{cause: execReqStop, code: -1}
	r2.event(SupEvStopFailed+" "+reason, &out2)
	require.True(t, r2.event(SupEvExited+" -1", &out2))
	out2.exited = true
	require.False(t, r2.next(out2))
	rs2 := reports2()
	require.Equal(t, metadata.AllocStopped, rs2[len(rs2)-1].State)
}

// fakeSupervisor stands for `corral supervise` whose stop failed: it
// says so and, like the real one, stays while its task would live.
func fakeSupervisor(t *testing.T) *execSup {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `read line; echo "stopfailed cannot send terminated: operation not permitted; give the worker CAP_KILL"; exec sleep 300`)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return &execSup{cmd: cmd, stdin: stdin, events: execLines(stdout), stderr: &execTail{max: 2048}}
}

// A stop that failed keeps the runner waiting for the task (no forced end
// that would read "stopped"), until the executor closes: then it gives the
// supervisor up and the allocation is failed, never stopped.
func TestRunner_StopFailureWaitsUntilClose(t *testing.T) {
	e, reports := recordingExecutor(t)
	e.cfg.RefreshEvery, e.cfg.LostGrace = time.Hour, 10*time.Millisecond
	r := &execRunner{e: e, id: "a1", user: "nobody", wake: make(chan struct{}, 1), done: make(chan struct{}),
		spec: Alloc{Task: metadata.Task{KillTimeout: metadata.Duration(10 * time.Millisecond)}}}
	ended := make(chan execOutcome, 1)
	go func() { ended <- r.supervise(fakeSupervisor(t)) }()

	e.mu.Lock()
	r.requestStopLocked()
	e.mu.Unlock()
	require.Eventually(t, func() bool { return len(reports()) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, metadata.AllocRunning, reports()[0].State)
	// The old force timer (kill timeout + 2 s) would have ended it by
	// now; the task still runs, so the runner still waits.
	select {
	case out := <-ended:
		t.Fatalf("runner gave up a task it could not stop: %+v", out)
	case <-time.After(2500 * time.Millisecond):
	}

	e.mu.Lock()
	e.closed = true
	r.wakeUp()
	e.mu.Unlock()
	var out execOutcome
	select {
	case out = <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Close would wait forever for a task that cannot be stopped")
	}
	require.False(t, r.next(out))
	rs := reports()
	require.Equal(t, metadata.AllocFailed, rs[len(rs)-1].State)
	require.Contains(t, rs[len(rs)-1].Message, "could not stop the task running as nobody")
}

// A task killed by a signal reports 128 plus the signal, as shells do,
// rather than Go's -1.
func TestExitCode_SignalAsShellsReportIt(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "-c", "kill -TERM $$")
	err := cmd.Run()
	require.Error(t, err)
	require.Equal(t, 143, exitCode(err))
	require.Equal(t, 3, exitCode(exec.Command("/bin/sh", "-c", "exit 3").Run()))
	require.Equal(t, 0, exitCode(nil))
}
