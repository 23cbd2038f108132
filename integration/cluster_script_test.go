package integration

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scripts/cluster.sh starts the clusters of every benchmark and of
// scripts/compare.sh. Its start waits until the cluster serves and refuses
// a DIR whose controllers still run (a second start once said "cluster up"
// for the old cluster and overwrote its pid files); its stop returns only
// once the controllers have exited (a start right after a stop found the
// data dirs locked).
func TestClusterScript_StartRefusesARunningDirAndStopWaits(t *testing.T) {
	requireCurl(t)
	dir := t.TempDir()
	sh := clusterScript(t, dir, freeBase(t), freeBase(t))

	out, err := sh.run("start")
	require.NoError(t, err, out)
	require.Contains(t, out, "cluster up")
	pids := clusterPids(t, dir)

	out, err = sh.run("start")
	requireExit1(t, err, out)
	require.Contains(t, out, "already running")
	require.Equal(t, pids, clusterPids(t, dir), "a refused start left the pid files alone")
	for _, p := range pids {
		require.True(t, procAlive(p), "controller pid %d was stopped by a refused start", p)
	}

	// A slow stop snapshot, made deterministic: controller 1 is held
	// (SIGSTOP) until the script is in its wait loop, which it enters only
	// after its kill, once it finds a controller still running. A stop
	// that did not wait returns with controller 1 still held.
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(pids[0], syscall.SIGCONT) })
	var stopOut bytes.Buffer
	stop := sh.command("stop")
	stop.Stdout, stop.Stderr = &stopOut, &stopOut
	require.NoError(t, stop.Start())
	released := make(chan bool, 1)
	go func() { released <- contWhenWaiting(stop.Process.Pid, pids[0]) }()
	require.NoError(t, stop.Wait(), stopOut.String())
	require.True(t, <-released, "stop returned without waiting for the controllers: %s", stopOut.String())
	for _, p := range pids {
		require.False(t, procAlive(p), "controller pid %d still runs after stop returned", p)
	}

	out, err = sh.run("start") // at once, on the same data dirs
	require.NoError(t, err, out)
	require.Contains(t, out, "cluster up")
	out, err = sh.run("stop")
	require.NoError(t, err, out)
}

// A controller that cannot start (its cluster port is taken) is named by
// start, which fails at once instead of waiting out its 60 s.
func TestClusterScript_StartNamesAControllerThatExited(t *testing.T) {
	requireCurl(t)
	dir := t.TempDir()
	clusterBase := freeBase(t)
	taken, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", clusterBase+1))
	require.NoError(t, err)
	defer taken.Close()
	sh := clusterScript(t, dir, freeBase(t), clusterBase)

	out, err := sh.run("start")
	requireExit1(t, err, out)
	require.Contains(t, out, "controller 1 exited")
	require.Contains(t, out, filepath.Join(dir, "node-1.log"))
}

func requireCurl(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("curl")
	require.NoError(t, err, "scripts/cluster.sh polls the cluster with curl: install it (apt-get install curl)")
}

// clusterSh runs scripts/cluster.sh CMD DIR with this test's binary and
// ports.
type clusterSh struct {
	script, dir           string
	httpBase, clusterBase int
}

// clusterScript returns a runner of scripts/cluster.sh on dir; a cleanup
// stops whatever it started.
func clusterScript(t *testing.T, dir string, httpBase, clusterBase int) clusterSh {
	t.Helper()
	script, err := filepath.Abs("../scripts/cluster.sh")
	require.NoError(t, err)
	sh := clusterSh{script: script, dir: dir, httpBase: httpBase, clusterBase: clusterBase}
	t.Cleanup(func() {
		if out, err := sh.run("stop"); err != nil {
			t.Logf("cleanup: cluster.sh stop: %v: %s", err, out)
		}
	})
	return sh
}

func (sh clusterSh) command(cmd string) *exec.Cmd {
	c := exec.Command("bash", sh.script, cmd, sh.dir)
	c.Env = append(os.Environ(), "CORRAL_BIN="+corralBin,
		"CORRAL_HTTP_BASE="+strconv.Itoa(sh.httpBase), "CORRAL_CLUSTER_BASE="+strconv.Itoa(sh.clusterBase))
	return c
}

func (sh clusterSh) run(cmd string) (string, error) {
	out, err := sh.command(cmd).CombinedOutput()
	return string(out), err
}

// contWhenWaiting continues the stopped process pid once the script
// (scriptPid) is in its wait loop, seen as a `sleep` child of it; it
// reports false, leaving pid stopped, if the script ends first or 30 s
// pass.
func contWhenWaiting(scriptPid, pid int) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if hasChild(scriptPid, "sleep") {
			return syscall.Kill(pid, syscall.SIGCONT) == nil
		}
		if !procAlive(scriptPid) {
			return false
		}
		select {
		case <-tick.C:
		case <-deadline:
			return false
		}
	}
}

// hasChild reports whether a process named comm has parent ppid.
func hasChild(ppid int, comm string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, _, parent, ok := procStat(pid); ok && parent == ppid && c == comm {
			return true
		}
	}
	return false
}

func requireExit1(t *testing.T, err error, out string) {
	t.Helper()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "want exit status 1, got %v: %s", err, out)
	require.Equal(t, 1, ee.ExitCode(), out)
}

// clusterPids reads DIR/node-{1,2,3}.pid.
func clusterPids(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	for i := 1; i <= 3; i++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node-%d.pid", i)))
		require.NoError(t, err)
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		pids = append(pids, p)
	}
	return pids
}

// procAlive reports whether pid is a live process: not gone, and not a
// zombie (the script's children are reparented, and whoever reaps them
// may not have yet).
func procAlive(pid int) bool {
	_, state, _, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// procStat reads a process's name, state and parent from /proc/PID/stat.
func procStat(pid int) (comm string, state byte, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	// "PID (COMM) STATE PPID ...": the name may hold spaces and
	// parentheses, so it ends at the last ')'.
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return "", 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return s[open+1 : end], f[0][0], ppid, err == nil
}

// freeBase returns a port p such that p+1..p+3 are free for TCP and UDP,
// for the scripts that put node i on BASE+i.
func freeBase(t *testing.T) int {
	t.Helper()
	return freePorts(t, 3) - 1
}

// portFree reports whether 127.0.0.1:p can be bound for TCP and UDP (QUIC).
func portFree(p int) bool {
	addr := fmt.Sprintf("127.0.0.1:%d", p)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}
