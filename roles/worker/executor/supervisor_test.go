package executor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// supHarness runs Supervise in-process with pipes standing in for the
// worker's side.
type supHarness struct {
	t      *testing.T
	in     *io.PipeWriter
	events chan string
	done   chan int
	dir    string
}

func startSupervised(t *testing.T, script string, tweak func(*SupervisorConfig)) *supHarness {
	t.Helper()
	dir := t.TempDir()
	cfg := SupervisorConfig{
		Command: "/bin/sh", Args: []string{"-c", script}, Env: append(os.Environ(), "DIR="+dir), Workdir: dir,
		Stdout: filepath.Join(dir, "stdout.log"), Stderr: filepath.Join(dir, "stderr.log"),
		RefreshTimeout: 10 * time.Second, KillTimeout: 5 * time.Second,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &supHarness{t: t, in: inW, events: make(chan string, 16), done: make(chan int, 1), dir: dir}
	go func() {
		code, _ := Supervise(context.Background(), cfg, inR, outW)
		outW.Close()
		h.done <- code
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			h.events <- sc.Text()
		}
		close(h.events)
	}()
	t.Cleanup(func() { inW.Close() })
	return h
}

func (h *supHarness) event(prefix string) string {
	h.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-h.events:
			require.True(h.t, ok, "supervisor ended before %q", prefix)
			if strings.HasPrefix(ev, prefix) {
				return strings.TrimSpace(strings.TrimPrefix(ev, prefix))
			}
		case <-timeout:
			h.t.Fatalf("no %q event", prefix)
		}
	}
}

// pidAlive reports whether pid still exists (and is not a zombie we own).
func pidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

// waitFile polls until path exists and returns its trimmed content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	var s string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		s = strings.TrimSpace(string(b))
		return err == nil && s != ""
	}, 10*time.Second, 10*time.Millisecond)
	return s
}

func TestSupervisor_ExitCodeAndLogs(t *testing.T) {
	h := startSupervised(t, "echo out-line; echo err-line >&2; exit 7", nil)
	h.event(SupEvStarted)
	require.Equal(t, "7", h.event(SupEvExited))
	require.Equal(t, 7, <-h.done)
	out, _ := os.ReadFile(filepath.Join(h.dir, "stdout.log"))
	errb, _ := os.ReadFile(filepath.Join(h.dir, "stderr.log"))
	require.Equal(t, "out-line\n", string(out))
	require.Equal(t, "err-line\n", string(errb))
}

func TestSupervisor_WorkerGoneKillsWholeProcessGroup(t *testing.T) {
	// The task starts a grandchild that ignores SIGTERM: both must die.
	h := startSupervised(t, `trap '' TERM; (trap '' TERM; echo $$ > /dev/null; sleep 300) & echo $! > "$DIR/child"; sleep 300`, nil)
	pid, _ := strconv.Atoi(h.event(SupEvStarted))
	child, _ := strconv.Atoi(waitFile(t, filepath.Join(h.dir, "child")))
	require.True(t, pidAlive(pid) && pidAlive(child))
	h.in.Close() // the worker died: its end of the pipe is gone
	require.Contains(t, h.event(SupEvLost), "closed")
	h.event(SupEvExited)
	require.Eventually(t, func() bool { return !pidAlive(pid) && !pidAlive(child) }, 10*time.Second, 10*time.Millisecond,
		"task or its child outlived the supervision")
}

func TestSupervisor_NoRefreshKillsTask(t *testing.T) {
	h := startSupervised(t, "sleep 300", func(c *SupervisorConfig) { c.RefreshTimeout = 300 * time.Millisecond })
	pid, _ := strconv.Atoi(h.event(SupEvStarted))
	start := time.Now()
	require.Contains(t, h.event(SupEvLost), "no refresh")
	h.event(SupEvExited)
	require.False(t, pidAlive(pid))
	t.Logf("task killed %v after its last refresh", time.Since(start))
}

func TestSupervisor_RefreshKeepsTaskAliveAndStopIsGraceful(t *testing.T) {
	h := startSupervised(t, `trap 'echo got-term; exit 3' TERM; while true; do sleep 0.05; done`,
		func(c *SupervisorConfig) { c.RefreshTimeout = 200 * time.Millisecond })
	pid, _ := strconv.Atoi(h.event(SupEvStarted))
	for i := 0; i < 10; i++ {
		_, err := io.WriteString(h.in, SupRefresh+"\n")
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond) // refresh cadence of a live worker
	}
	require.True(t, pidAlive(pid), "refreshed task was killed")
	_, err := io.WriteString(h.in, SupStop+"\n")
	require.NoError(t, err)
	require.Equal(t, "3", h.event(SupEvExited))
	out, _ := os.ReadFile(filepath.Join(h.dir, "stdout.log"))
	require.Contains(t, string(out), "got-term")
}

func TestSupervisor_StopEscalatesToSIGKILL(t *testing.T) {
	h := startSupervised(t, `trap '' TERM; sleep 300`, func(c *SupervisorConfig) { c.KillTimeout = 200 * time.Millisecond })
	pid, _ := strconv.Atoi(h.event(SupEvStarted))
	_, err := io.WriteString(h.in, SupStop+"\n")
	require.NoError(t, err)
	h.event(SupEvExited)
	require.False(t, pidAlive(pid))
}

func TestSupervisor_StartFailureIsReported(t *testing.T) {
	h := startSupervised(t, "", func(c *SupervisorConfig) { c.Command = "/nonexistent/binary" })
	require.Contains(t, h.event(SupEvFailed), "no such file")
}

func TestRotatingFile_CapsSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	r, err := openRotating(path, 100, 2)
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		_, err := r.Write([]byte("0123456789\n"))
		require.NoError(t, err)
	}
	require.NoError(t, r.Close())
	for _, p := range []string{path, path + ".1", path + ".2"} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.LessOrEqual(t, st.Size(), int64(100))
	}
	_, err = os.Stat(path + ".3")
	require.True(t, os.IsNotExist(err), "only 2 rotated files are kept")
}
