package integration

import (
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

	out, err := sh("start")
	require.NoError(t, err, out)
	require.Contains(t, out, "cluster up")
	pids := clusterPids(t, dir)

	out, err = sh("start")
	requireExit1(t, err, out)
	require.Contains(t, out, "already running")
	require.Equal(t, pids, clusterPids(t, dir), "a refused start left the pid files alone")
	for _, p := range pids {
		require.True(t, procAlive(p), "controller pid %d was stopped by a refused start", p)
	}

	// A slow stop snapshot, made deterministic: controller 1 is stopped
	// (SIGSTOP) and let go half a second after the script's SIGTERM
	// reached it, as a snapshot of a larger state would take.
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGSTOP))
	released := make(chan error, 1)
	go func() { released <- contOnceTermPending(pids[0]) }()
	out, err = sh("stop")
	require.NoError(t, err, out)
	for _, p := range pids {
		require.False(t, procAlive(p), "controller pid %d still runs after stop returned", p)
	}
	require.NoError(t, <-released)

	out, err = sh("start") // at once, on the same data dirs
	require.NoError(t, err, out)
	require.Contains(t, out, "cluster up")
	out, err = sh("stop")
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

	out, err := sh("start")
	requireExit1(t, err, out)
	require.Contains(t, out, "controller 1 exited")
	require.Contains(t, out, filepath.Join(dir, "node-1.log"))
}

func requireCurl(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("curl")
	require.NoError(t, err, "scripts/cluster.sh polls the cluster with curl: install it (apt-get install curl)")
}

// clusterScript runs scripts/cluster.sh CMD DIR with this test's binary and
// ports; a cleanup stops whatever it started.
func clusterScript(t *testing.T, dir string, httpBase, clusterBase int) func(cmd string) (string, error) {
	t.Helper()
	script, err := filepath.Abs("../scripts/cluster.sh")
	require.NoError(t, err)
	sh := func(cmd string) (string, error) {
		c := exec.Command("bash", script, cmd, dir)
		c.Env = append(os.Environ(), "CORRAL_BIN="+corralBin,
			"CORRAL_HTTP_BASE="+strconv.Itoa(httpBase), "CORRAL_CLUSTER_BASE="+strconv.Itoa(clusterBase))
		out, err := c.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := sh("stop"); err != nil {
			t.Logf("cleanup: cluster.sh stop: %v: %s", err, out)
		}
	})
	return sh
}

// contOnceTermPending waits (up to 30 s) for a SIGTERM to be pending at
// the stopped process pid, then continues it half a second later: the
// time stands for a stop snapshot's, it is not a wait for a condition.
func contOnceTermPending(pid int) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return fmt.Errorf("read status of %d: %w", pid, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			mask, ok := strings.CutPrefix(line, "ShdPnd:")
			if !ok {
				continue
			}
			if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && m&(1<<(syscall.SIGTERM-1)) != 0 {
				time.Sleep(500 * time.Millisecond)
				return syscall.Kill(pid, syscall.SIGCONT)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	return fmt.Errorf("no SIGTERM reached %d in 30 s", pid)
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
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
