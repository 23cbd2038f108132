package executor

import (
	"io"
	"log/slog"
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
