package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func parseAPITime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err, "timestamp %q", s)
	return ts
}

func (c *cluster) endpointsFlag() string {
	var eps []string
	for i := uint64(1); i <= uint64(len(c.nodes)); i++ {
		eps = append(eps, c.nodes[i].endpoint())
	}
	return "--endpoints=" + strings.Join(eps, ",")
}

func TestWorkers_RegisterCrashRestartAndLeave(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	w := c.newWorker("a", "--labels=zone=a,disk=ssd", "--cpu=1500", "--memory=512")
	w.start()
	id := w.id()
	require.Equal(t, "a", id, "the worker does not run under the id its certificate names")
	got := c.waitWorker(id, "alive", 30*time.Second)
	require.Equal(t, uint64(1), got.Epoch)
	require.Equal(t, map[string]string{"zone": "a", "disk": "ssd", "corral.limits": "not-enforced", "corral.max_allocs": "100"}, got.Labels)
	require.EqualValues(t, 1500, got.Capacity.CPUMillis)
	require.EqualValues(t, 512, got.Capacity.MemoryMB)
	require.Equal(t, []string{w.httpAddr}, got.Addresses)
	require.Eventually(t, w.ready, 10*time.Second, 20*time.Millisecond)

	out, code := runCLI(t, "worker", "list", c.endpointsFlag())
	require.Zero(t, code, out)
	require.Contains(t, out, id)
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(id)+`\s+alive\s+1\s`, out)

	// kill -9: fenced within the session timeout plus one heartbeat interval.
	w.kill()
	killed := time.Now()
	fenced := c.waitWorker(id, "fenced", itSessionTimeout+15*time.Second)
	took := parseAPITime(t, fenced.StateChangedAt).Sub(killed)
	t.Logf("fenced %s after kill -9 (session timeout %s, heartbeat %s)", took, itSessionTimeout, itHeartbeat)
	require.Greater(t, took, itSessionTimeout-itHeartbeat, "fenced before the session timeout")
	require.Less(t, took, itSessionTimeout+itHeartbeat, "not fenced within session timeout + one heartbeat interval")
	require.Equal(t, "session_timeout", fenced.Reason)
	require.Equal(t, uint64(1), fenced.Epoch)

	// Restarted from its data dir: same id, higher epoch.
	w.start()
	c.waitWorkerEpoch(id, "alive", 2, 30*time.Second)

	// SIGTERM: marked left at once (the worker exits only after the leader
	// committed it), not fenced after the timeout.
	require.Eventually(t, w.ready, 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	w.term()
	require.Less(t, time.Since(start), itSessionTimeout/2)
	ws, _, ok := c.leaderWorkers()
	require.True(t, ok)
	require.Equal(t, "left", ws[id].State)
	require.Equal(t, "shutdown", ws[id].Reason)
	require.Equal(t, uint64(2), ws[id].Epoch)
}

func TestWorkers_LeaderKilledWorkersMoveWithoutFencing(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	var workers []*workerProc
	var ids []string
	for _, name := range []string{"a", "b", "c", "doomed"} {
		w := c.newWorker(name)
		w.start()
		workers = append(workers, w)
		ids = append(ids, w.id())
	}
	for _, id := range ids {
		c.waitWorker(id, "alive", 30*time.Second)
	}
	_, lead, ok := c.leaderWorkers()
	require.True(t, ok)
	oldTerm := func() uint64 { ci, err := c.nodes[lead].info(); require.NoError(t, err); return ci.Term }()

	// kill -9 the leader, and a worker while the others elect a successor.
	c.kill(lead)
	doomed := workers[3]
	doomed.kill()
	killed := time.Now()
	var rest []uint64
	for id := range c.nodes {
		if id != lead {
			rest = append(rest, id)
		}
	}
	newLead := c.waitLeader(30*time.Second, rest...)
	t.Logf("leader %d killed; %d leads now", lead, newLead)

	// The doomed worker is fenced, a full session timeout after the kill.
	fenced := c.waitWorker(ids[3], "fenced", itSessionTimeout+20*time.Second, rest...)
	require.GreaterOrEqual(t, parseAPITime(t, fenced.StateChangedAt).Sub(killed), itSessionTimeout)

	// Nobody alive was fenced by the failover: same epoch, never fenced on
	// either side, heartbeating to the new leader's epoch.
	ws, now, ok := c.leaderWorkers(rest...)
	require.True(t, ok)
	require.Equal(t, newLead, now)
	for i, w := range workers[:3] {
		got := ws[ids[i]]
		require.Equal(t, "alive", got.State, ids[i])
		require.Equal(t, uint64(1), got.Epoch, "worker %s re-registered", ids[i])
		require.NotNil(t, got.LastHeartbeatAgeMS)
		require.True(t, w.ready())
		require.Empty(t, logEntries(t, w.logPath, "worker fenced: stopping work"), "worker %s fenced itself", ids[i])
		require.Greater(t, workerMetric(t, w, "corral_worker_session_controller_epoch"), float64(oldTerm), "worker %s holds its session at the new leader", ids[i])
	}
}

func TestWorkers_SecondProcessWithSameIDIsRefused(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	a := c.newWorker("a")
	a.start()
	id := a.id()
	c.waitWorker(id, "alive", 30*time.Second)

	b := c.newWorker("b", "--node-id="+id)
	b.start()
	require.Eventually(t, func() bool {
		lead, ok := c.currentLeader()
		return ok && metricValue(t, c.nodes[lead], "corral_workers_registrations_refused_total") > 0
	}, 20*time.Second, 50*time.Millisecond)
	require.False(t, b.ready())
	require.True(t, a.ready())
	ws, _, _ := c.leaderWorkers()
	require.Equal(t, uint64(1), ws[id].Epoch)

	// Once the first is gone (and fenced), the second one gets the id.
	a.kill()
	c.waitWorkerEpoch(id, "alive", 2, itSessionTimeout+20*time.Second)
	require.Eventually(t, b.ready, 10*time.Second, 20*time.Millisecond)
}

func TestWorkers_CombinedRoleRunsControllerAndWorker(t *testing.T) {
	dir := t.TempDir()
	// The process is controller 1 and a worker: its controller certificate
	// for node 1 serves both (a controller may speak for the worker in its
	// own process, which runs under --node-id).
	newCA(t, filepath.Join(dir, "ca"), "it-combined")
	issueCert(t, filepath.Join(dir, "ca"), roleController, "1", filepath.Join(dir, "tls"))
	clusterAddr, httpAddr, workerHTTP := freeAddr(t), freeAddr(t), freeAddr(t)
	cmd := exec.Command(corralBin, "run", "--role=combined", "--node-id=1", "--data-dir="+filepath.Join(dir, "data"),
		"--cluster-addr="+clusterAddr, "--http-addr="+httpAddr, "--controllers=1@"+clusterAddr,
		"--tls-dir="+filepath.Join(dir, "tls"), "--worker-http-addr="+workerHTTP, "--labels=role=dev", "--log-format=json")
	logPath := filepath.Join(dir, "combined.log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("--- combined node log ---\n%s", b)
		}
	})

	c := &cluster{t: t, dir: dir, nodes: map[uint64]*node{1: {id: 1, httpAddr: httpAddr, clusterAddr: clusterAddr, cmd: cmd}}}
	got := c.waitWorker("1", "alive", 30*time.Second)
	require.Equal(t, map[string]string{"role": "dev", "corral.limits": "not-enforced", "corral.max_allocs": "100"}, got.Labels)
	w := &workerProc{t: t, httpAddr: workerHTTP}
	require.Eventually(t, w.ready, 10*time.Second, 20*time.Millisecond)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("combined node did not stop on SIGTERM")
	}
	require.NotEmpty(t, logEntries(t, logPath, "left the cluster"), "the worker did not leave before the controller stopped")
}

func TestWorkers_BenchCommandSmoke(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	// The benchmark speaks for 20 workers over one certificate, which only a
	// controller certificate may do (a worker's names one worker). It gets
	// its own, for a controller id outside the quorum, rather than
	// controller 1's: it is a client of the cluster, not node 1, and needs no
	// running node's key; were it to speak raft, the controllers would drop
	// its messages as a non-member's.
	benchTLS := c.issue(roleController, "100", filepath.Join(c.dir, "tls-bench"))
	out, code := runCLI(t, "bench", "workers", c.endpointsFlag(), "--controllers="+c.clusterAddrs(),
		"--tls-dir="+benchTLS, "--workers=20", "--duration=2s", "--heartbeat-interval=250ms")
	require.Zero(t, code, out)
	require.Contains(t, out, "ramp: 20 of 20 workers alive")
	require.Contains(t, out, "false fencings: 0 while measuring")
	require.Contains(t, out, "leader CPU:")
	require.Regexp(t, `heartbeats/s handled by the leader: \d+`, out)
	ws, _, ok := c.leaderWorkers()
	require.True(t, ok)
	left := 0
	for _, w := range ws {
		if w.State == "left" {
			left++
		}
	}
	require.Equal(t, 20, left, "the simulated workers did not leave at the end")
}

// workerMetric reads one metric from a worker's /metrics.
func workerMetric(t *testing.T, w *workerProc, name string) float64 {
	t.Helper()
	return metricValue(t, &node{httpAddr: w.httpAddr}, name)
}
