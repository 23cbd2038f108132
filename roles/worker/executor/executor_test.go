package executor

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

var (
	execBinOnce sync.Once
	execBin     string
	execBinErr  error
)

// execCorralBinary builds corral once per test run for `corral supervise`.
// It lives at a fixed path, replaced atomically, so runs reuse one file
// instead of leaving a binary behind each time (there is no TestMain to
// clean up).
func execCorralBinary(t *testing.T) string {
	t.Helper()
	execBinOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "corral-executor-test")
		if execBinErr = os.MkdirAll(dir, 0o755); execBinErr != nil {
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf("corral.%d", os.Getpid()))
		out, err := exec.Command("go", "build", "-o", tmp, "github.com/corral-dev/corral").CombinedOutput()
		if err != nil {
			execBinErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		execBin = filepath.Join(dir, "corral")
		execBinErr = os.Rename(tmp, execBin)
	})
	require.NoError(t, execBinErr)
	return execBin
}

// execHarness runs an executor with real supervisors and records reports.
type execHarness struct {
	t   *testing.T
	e   *Executor
	dir string

	mu      sync.Mutex
	reports []Report
	cursor  map[string]int // per alloc: index after the last awaited report
}

func newExecHarness(t *testing.T, tweak func(*Config)) *execHarness {
	t.Helper()
	h := &execHarness{t: t, dir: t.TempDir(), cursor: map[string]int{}}
	cfg := Config{
		Dir: h.dir, SupervisorCmd: []string{execCorralBinary(t), "supervise"},
		RefreshEvery: 100 * time.Millisecond, RefreshTimeout: 5 * time.Second, LostGrace: 200 * time.Millisecond,
		Report: func(r Report) {
			h.mu.Lock()
			h.reports = append(h.reports, r)
			h.mu.Unlock()
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := New(cfg)
	require.NoError(t, err)
	h.e = e
	t.Cleanup(e.Close)
	return h
}

// of returns the reports of one allocation so far.
func (h *execHarness) of(id string) []Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Report
	for _, r := range h.reports {
		if r.ID == id {
			out = append(out, r)
		}
	}
	return out
}

func (h *execHarness) states(id string) []metadata.AllocState {
	var s []metadata.AllocState
	for _, r := range h.of(id) {
		s = append(s, r.State)
	}
	return s
}

// await returns the first report of id in state after the last one
// awaited (skipping others).
func (h *execHarness) await(id string, state metadata.AllocState) Report {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		rs := h.of(id)
		h.mu.Lock()
		for i := h.cursor[id]; i < len(rs); i++ {
			if rs[i].State == state {
				h.cursor[id] = i + 1
				h.mu.Unlock()
				return rs[i]
			}
		}
		h.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("no %q report for %s; got %v", state, id, h.states(id))
	return Report{}
}

// file polls for a file the task writes in its own dir.
func (h *execHarness) file(id, name string) string {
	h.t.Helper()
	return waitFile(h.t, h.taskPath(id, name))
}

// taskPath is a path in the task's own dir (its default workdir).
func (h *execHarness) taskPath(id, name string) string {
	return filepath.Join(h.dir, id, TaskDirName, name)
}

func (h *execHarness) pid(id string) int {
	h.t.Helper()
	pid, err := strconv.Atoi(h.file(id, "pid"))
	require.NoError(h.t, err)
	return pid
}

func shAlloc(id, typ, script string) Alloc {
	return Alloc{ID: id, Job: "job-" + id, Type: typ, Desired: metadata.DesiredRun,
		Task: metadata.Task{Command: "/bin/sh", Args: []string{"-c", script}, KillTimeout: metadata.Duration(5 * time.Second)}}
}

func TestExecutor_BatchExitsZero(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("b1", metadata.JobBatch, `echo "$CORRAL_ALLOC_ID $CORRAL_JOB $FOO ${HOME:-nohome} $(pwd)"`)
	a.Task.Env = map[string]string{"FOO": "bar"}
	h.e.Apply([]Alloc{a})
	h.await("b1", metadata.AllocStarting)
	h.await("b1", metadata.AllocRunning)
	r := h.await("b1", metadata.AllocExited)
	require.Equal(t, 0, r.ExitCode)
	require.Equal(t, 0, r.Restarts)
	out, _, err := h.e.ReadLog("b1", "stdout", 0, 0, 0)
	require.NoError(t, err)
	// The worker's environment (HOME) is not inherited; the workdir is the alloc dir.
	require.Equal(t, "b1 job-b1 bar nohome "+h.taskPath("b1", "")+"\n", string(out))
	require.Equal(t, 0, h.e.Running())
}

func TestExecutor_RestartPolicyThenFailed(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("r1", metadata.JobBatch, "echo run; exit 3")
	a.Restart = metadata.RestartPolicy{Attempts: 2, Delay: metadata.Duration(50 * time.Millisecond), Backoff: 2}
	h.e.Apply([]Alloc{a})
	h.await("r1", metadata.AllocStarting)
	h.await("r1", metadata.AllocRunning)
	for i, want := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		s := h.await("r1", metadata.AllocStarting)
		require.Contains(t, s.Message, fmt.Sprintf("exited with code 3; restarting in %v (attempt %d of 2)", want, i+1))
		run := h.await("r1", metadata.AllocRunning)
		require.GreaterOrEqual(t, run.At.Sub(s.At), want, "restart %d came too early", i+1)
		require.Equal(t, i+1, run.Restarts)
	}
	f := h.await("r1", metadata.AllocFailed)
	require.Equal(t, 3, f.ExitCode)
	require.Equal(t, 2, f.Restarts)
	require.Equal(t, "exited with code 3; 2 restarts spent", f.Message)
	out, _, err := h.e.ReadLog("r1", "stdout", 0, 0, 0)
	require.NoError(t, err)
	require.Equal(t, "run\nrun\nrun\n", string(out), "restarts append to the same log")
}

func TestExecutor_StartFailureCountsAsExit(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("nf", metadata.JobService, "")
	a.Task.Command, a.Task.Args = "/nonexistent/binary", nil
	a.Restart = metadata.RestartPolicy{Attempts: 1, Delay: metadata.Duration(10 * time.Millisecond), Backoff: 1}
	empty := shAlloc("empty", metadata.JobBatch, "")
	empty.Task.Command = ""
	h.e.Apply([]Alloc{a, empty})
	h.await("nf", metadata.AllocStarting)
	require.Contains(t, h.await("nf", metadata.AllocStarting).Message, "attempt 1 of 1")
	f := h.await("nf", metadata.AllocFailed)
	require.Equal(t, -1, f.ExitCode)
	require.Contains(t, f.Message, "no such file")
	require.Contains(t, f.Message, "1 restarts spent")
	h.await("empty", metadata.AllocStarting)
	require.Contains(t, h.await("empty", metadata.AllocFailed).Message, "no command")
}

func TestExecutor_StopSendsSIGTERM(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("s1", metadata.JobService, `trap 'echo got-term; exit 5' TERM; echo $$ > pid; while :; do sleep 0.05; done`)
	h.e.Apply([]Alloc{a})
	h.await("s1", metadata.AllocStarting)
	h.await("s1", metadata.AllocRunning)
	pid := h.pid("s1")
	require.Eventually(t, func() bool { return h.e.Running() == 1 }, 10*time.Second, 5*time.Millisecond)
	a.Desired = metadata.DesiredStop
	h.e.Apply([]Alloc{a})
	r := h.await("s1", metadata.AllocStopped)
	require.Equal(t, 5, r.ExitCode)
	require.Equal(t, "stopped by request", r.Message)
	require.False(t, pidAlive(pid))
	out, _, err := h.e.ReadLog("s1", "stdout", 0, 0, 0)
	require.NoError(t, err)
	require.Contains(t, string(out), "got-term")
	require.Equal(t, 0, h.e.Running())
	// A stopped allocation is never started again, even if asked.
	a.Desired = metadata.DesiredRun
	h.e.Apply([]Alloc{a})
	require.Equal(t, []metadata.AllocState{metadata.AllocStarting, metadata.AllocRunning, metadata.AllocStopped}, h.states("s1"))
}

func TestExecutor_AbsentFromSetIsStopped(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	h.e.Apply([]Alloc{shAlloc("gone", metadata.JobService, "echo $$ > pid; exec sleep 300")})
	h.await("gone", metadata.AllocStarting)
	h.await("gone", metadata.AllocRunning)
	pid := h.pid("gone")
	h.e.Apply(nil)
	h.await("gone", metadata.AllocStopped)
	require.False(t, pidAlive(pid))
}

func TestExecutor_KillTimeoutEscalates(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("k1", metadata.JobService, `trap '' TERM; echo $$ > pid; sleep 300`)
	a.Task.KillTimeout = metadata.Duration(200 * time.Millisecond)
	h.e.Apply([]Alloc{a})
	h.await("k1", metadata.AllocRunning)
	pid := h.pid("k1")
	a.Desired = metadata.DesiredStop
	start := time.Now()
	h.e.Apply([]Alloc{a})
	r := h.await("k1", metadata.AllocStopped)
	took := time.Since(start)
	require.Equal(t, 137, r.ExitCode, "killed by SIGKILL: 128+9, as shells report it")
	require.GreaterOrEqual(t, took, 200*time.Millisecond)
	require.Less(t, took, 3*time.Second)
	require.False(t, pidAlive(pid))
}

func TestExecutor_RestartGenBumpRestarts(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("g1", metadata.JobService, `echo x >> starts; echo $$ > pid; exec sleep 300`)
	a.RestartGen = 4
	a.Restart = metadata.RestartPolicy{Attempts: 0}
	h.e.Apply([]Alloc{a})
	h.await("g1", metadata.AllocRunning)
	first := h.pid("g1")
	a.RestartGen = 5
	h.e.Apply([]Alloc{a})
	s := h.await("g1", metadata.AllocStarting)
	require.Equal(t, 1, s.Restarts)
	require.Equal(t, "restarting by request", s.Message)
	h.await("g1", metadata.AllocRunning)
	require.False(t, pidAlive(first), "the old process was stopped first")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(h.taskPath("g1", "starts"))
		return string(b) == "x\nx\n"
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, h.e.Running())
}

func TestExecutor_KillAllKillsQuickly(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("ka", metadata.JobService, `trap '' TERM; echo $$ > pid; sleep 300`)
	a.Task.KillTimeout = metadata.Duration(time.Minute) // KillAll must not wait for it
	h.e.Apply([]Alloc{a})
	h.await("ka", metadata.AllocRunning)
	pid := h.pid("ka")
	start := time.Now()
	h.e.KillAll("fenced")
	require.Less(t, time.Since(start), 3*time.Second)
	require.False(t, pidAlive(pid))
	require.Equal(t, 0, h.e.Running())
	require.Equal(t, []metadata.AllocState{metadata.AllocStarting, metadata.AllocRunning}, h.states("ka"), "KillAll reports nothing")
	_, _, err := h.e.ReadLog("ka", "stdout", 0, 0, 0)
	require.ErrorContains(t, err, "unknown allocation", "KillAll forgets allocations")
}

func TestExecutor_ReadLog(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	script := `echo line1; echo line2; echo err >&2; while [ ! -f go ]; do sleep 0.02; done; echo line3; echo line4; echo line5`
	h.e.Apply([]Alloc{shAlloc("l1", metadata.JobBatch, script)})
	h.await("l1", metadata.AllocRunning)

	var data []byte
	var next int64
	require.Eventually(t, func() bool {
		var err error
		data, next, err = h.e.ReadLog("l1", "stdout", 0, 0, 0)
		require.NoError(t, err)
		return string(data) == "line1\nline2\n"
	}, 10*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 12, next)
	part, n, err := h.e.ReadLog("l1", "stdout", 0, 0, 3)
	require.NoError(t, err)
	require.Equal(t, "lin", string(part))
	require.EqualValues(t, 3, n)

	require.NoError(t, os.WriteFile(h.taskPath("l1", "go"), nil, 0o644))
	h.await("l1", metadata.AllocExited)
	data, next2, err := h.e.ReadLog("l1", "stdout", next, 0, 0)
	require.NoError(t, err)
	require.Equal(t, "line3\nline4\nline5\n", string(data))
	require.EqualValues(t, 30, next2)
	data, again, err := h.e.ReadLog("l1", "stdout", next2, 0, 0)
	require.NoError(t, err)
	require.Empty(t, data)
	require.Equal(t, next2, again)

	data, end, err := h.e.ReadLog("l1", "stdout", -1, 2, 0)
	require.NoError(t, err)
	require.Equal(t, "line4\nline5\n", string(data))
	require.EqualValues(t, 30, end)
	data, _, err = h.e.ReadLog("l1", "stdout", -1, 0, 6)
	require.NoError(t, err)
	require.Equal(t, "line5\n", string(data))
	data, _, err = h.e.ReadLog("l1", "stdout", -1, 10, 9)
	require.NoError(t, err)
	require.Equal(t, "line5\n", string(data), "a partial first line is dropped")
	data, _, err = h.e.ReadLog("l1", "stderr", -1, 10, 0)
	require.NoError(t, err)
	require.Equal(t, "err\n", string(data))

	_, _, err = h.e.ReadLog("nope", "stdout", 0, 0, 0)
	require.ErrorContains(t, err, `unknown allocation "nope"`)
	_, _, err = h.e.ReadLog("l1", "stdin", 0, 0, 0)
	require.ErrorContains(t, err, "unknown log stream")
}

func TestExecutor_LogRetentionRemovesDir(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, func(c *Config) { c.LogRetention = 100 * time.Millisecond })
	a := shAlloc("ret", metadata.JobBatch, "echo hi")
	h.e.Apply([]Alloc{a})
	h.await("ret", metadata.AllocExited)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(h.dir, "ret"))
		return os.IsNotExist(err)
	}, 10*time.Second, 5*time.Millisecond)
	_, _, err := h.e.ReadLog("ret", "stdout", 0, 0, 0)
	require.ErrorContains(t, err, "removed")
	h.e.Apply([]Alloc{a}) // still listed: remembered, never rerun
	h.e.Apply(nil)        // no longer listed: forgotten
	_, _, err = h.e.ReadLog("ret", "stdout", 0, 0, 0)
	require.ErrorContains(t, err, "unknown allocation")
	require.Equal(t, []metadata.AllocState{metadata.AllocStarting, metadata.AllocRunning, metadata.AllocExited}, h.states("ret"))
}

func TestExecutor_ApplyIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	a := shAlloc("i1", metadata.JobService, `echo x >> starts; exec sleep 300`)
	h.e.Apply([]Alloc{a})
	h.e.Apply([]Alloc{a})
	h.await("i1", metadata.AllocRunning)
	h.file("i1", "starts")
	h.e.Apply([]Alloc{a})
	h.e.Apply([]Alloc{a, a})
	a.Desired = metadata.DesiredStop
	h.e.Apply([]Alloc{a})
	h.await("i1", metadata.AllocStopped)
	require.Equal(t, []metadata.AllocState{metadata.AllocStarting, metadata.AllocRunning, metadata.AllocStopped}, h.states("i1"))
	b, err := os.ReadFile(h.taskPath("i1", "starts"))
	require.NoError(t, err)
	require.Equal(t, "x\n", string(b))
}

func TestExecutor_BadInput(t *testing.T) {
	t.Parallel()
	h := newExecHarness(t, nil)
	h.e.Apply([]Alloc{
		shAlloc("../escape", metadata.JobBatch, "echo no"),
		{ID: "never", Desired: metadata.DesiredStop},
		{ID: "weird", Desired: "dance"},
	})
	require.Contains(t, h.await("../escape", metadata.AllocFailed).Message, "invalid allocation id")
	require.Equal(t, -1, h.await("never", metadata.AllocStopped).ExitCode)
	_, _, err := h.e.ReadLog("never", "stdout", 0, 0, 0)
	require.ErrorContains(t, err, "no logs")
	_, _, err = h.e.ReadLog("weird", "stdout", 0, 0, 0)
	require.ErrorContains(t, err, "unknown allocation")
	_, err = os.Stat(filepath.Join(filepath.Dir(h.dir), "escape"))
	require.True(t, os.IsNotExist(err))
	_, err = New(Config{Dir: h.dir})
	require.Error(t, err)
}

func TestExecutor_LastLines(t *testing.T) {
	for _, c := range []struct {
		in      string
		n       int
		partial bool
		want    string
	}{
		{"a\nb\nc\n", 2, false, "b\nc\n"},
		{"a\nb\nc", 2, false, "b\nc"},
		{"a\nb\n", 5, false, "a\nb\n"},
		{"xa\nb\n", 5, true, "b\n"},
		{"abc", 1, true, "abc"},
		{"", 3, false, ""},
	} {
		require.Equal(t, c.want, string(execLastLines([]byte(c.in), c.n, c.partial)), "%q n=%d", c.in, c.n)
	}
	p := metadata.RestartPolicy{Delay: metadata.Duration(time.Second), Backoff: 2, MaxDelay: metadata.Duration(5 * time.Second)}
	var got []time.Duration
	for n := range 5 {
		got = append(got, execBackoff(p, n))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	require.Equal(t, metadata.MaxRestartDelay, execBackoff(metadata.RestartPolicy{Delay: metadata.Duration(time.Hour), Backoff: 10}, 1000))
}

// A worker whose session loop hangs withdraws its permission to refresh:
// the supervisor then kills the task by itself and it is reported lost.
func TestExecutor_NoRefreshWhenTheSessionStalls(t *testing.T) {
	t.Parallel()
	var allowed atomic.Bool
	allowed.Store(true)
	h := newExecHarness(t, func(c *Config) {
		c.RefreshTimeout = 500 * time.Millisecond
		c.MayRefresh = allowed.Load
	})
	h.e.Apply([]Alloc{shAlloc("st", metadata.JobService, `echo $$ > pid; exec sleep 300`)})
	h.await("st", metadata.AllocRunning)
	pid := h.pid("st")
	allowed.Store(false)
	h.await("st", metadata.AllocLost)
	require.Eventually(t, func() bool { return !pidAlive(pid) }, 5*time.Second, 10*time.Millisecond)
}

func TestExecutor_SweepsOldAllocDirsAtStart(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"old", "new"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
	}
	past := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "old"), past, past))
	sweepOldAllocDirs(dir, time.Hour, time.Now(), slog.New(slog.DiscardHandler))
	_, err := os.Stat(filepath.Join(dir, "old"))
	require.True(t, os.IsNotExist(err), "a dir older than the retention is removed")
	_, err = os.Stat(filepath.Join(dir, "new"))
	require.NoError(t, err)
}
