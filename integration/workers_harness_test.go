package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// Worker timing for the integration tests: elections in 0.5-1 s (50 ms
// ticks), a 4 s session timeout (self-fence after 2.4 s), heartbeats every
// 250 ms. A failover (detect, elect, reconnect) fits well inside the
// self-fence margin, and each test waits seconds, not tens of seconds.
const (
	itSessionTimeout = 4 * time.Second
	itHeartbeat      = 250 * time.Millisecond
)

// workerControllerFlags are the controllers' extra flags in worker tests.
func workerControllerFlags() []string {
	return []string{"--tick-interval=50ms", fmt.Sprintf("--session-timeout=%s", itSessionTimeout)}
}

// workerProc is one `corral run --role=worker` process.
type workerProc struct {
	t        *testing.T
	name     string
	dataDir  string
	httpAddr string
	logPath  string
	args     []string
	wrap     []string // command prefix, e.g. ip netns exec NS
	cmd      *exec.Cmd
	exited   chan struct{}
}

// clusterAddrs lists every controller's cluster address, as workers take them.
func (c *cluster) clusterAddrs() string {
	var addrs []string
	for i := uint64(1); i <= uint64(len(c.nodes)); i++ {
		addrs = append(addrs, c.nodes[i].clusterAddr)
	}
	return strings.Join(addrs, ",")
}

// newWorker prepares a worker process (not started) of this cluster, with
// a worker certificate of the cluster's CA in its own TLS dir. The
// certificate names the id the worker runs under: the --node-id=ID in extra
// if there is one, else name (so name must be a valid worker id). Two
// workers given the same --node-id (tests of a duplicate id) hold two
// certificates for the same worker: they share its identity.
func (c *cluster) newWorker(name string, extra ...string) *workerProc {
	c.t.Helper()
	w := &workerProc{
		t: c.t, name: name, dataDir: filepath.Join(c.dir, "worker-"+name), httpAddr: freeAddr(c.t),
		logPath: filepath.Join(c.dir, "worker-"+name+".log"),
	}
	id := name
	for _, a := range extra {
		if v, ok := strings.CutPrefix(a, "--node-id="); ok {
			id = v
		}
	}
	tlsDir := c.issue(roleWorker, id, filepath.Join(c.dir, "tls-worker-"+name))
	w.args = append([]string{"run", "--role=worker", "--data-dir=" + w.dataDir, "--controllers=" + c.clusterAddrs(),
		"--tls-dir=" + tlsDir, "--http-addr=" + w.httpAddr,
		"--heartbeat-interval=" + itHeartbeat.String(), "--log-format=json"}, extra...)
	c.t.Cleanup(func() {
		w.kill()
		if c.t.Failed() {
			w.dumpLog()
		}
	})
	return w
}

func (w *workerProc) start() {
	w.t.Helper()
	logf, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(w.t, err)
	argv := append(append([]string{}, w.wrap...), corralBin)
	argv = append(argv, w.args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(w.t, cmd.Start())
	w.cmd, w.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(w.exited)
	}()
}

// kill is kill -9: the worker says nothing to anyone.
func (w *workerProc) kill() {
	if w.cmd == nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
	w.cmd = nil
}

// term sends SIGTERM and waits (bounded) for a clean exit.
func (w *workerProc) term() {
	w.t.Helper()
	require.NoError(w.t, w.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-w.exited:
	case <-time.After(15 * time.Second):
		w.t.Fatalf("worker %s did not exit within 15s of SIGTERM", w.name)
	}
	require.Zero(w.t, w.cmd.ProcessState.ExitCode(), "worker %s exit code", w.name)
	w.cmd = nil
}

// id reads the worker id the process keeps in its data dir.
func (w *workerProc) id() string {
	w.t.Helper()
	var id string
	require.Eventually(w.t, func() bool {
		b, err := os.ReadFile(filepath.Join(w.dataDir, "worker-id"))
		id = strings.TrimSpace(string(b))
		return err == nil && id != ""
	}, 10*time.Second, 10*time.Millisecond)
	return id
}

func (w *workerProc) ready() bool {
	resp, err := http.Get("http://" + w.httpAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (w *workerProc) dumpLog() {
	b, err := os.ReadFile(w.logPath)
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	// Warnings first, all of them: a fencing or a refused epoch is what a
	// failure is usually about, and it may lie far from the log's end.
	var warns []string
	for _, l := range lines {
		if strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
			warns = append(warns, l)
		}
	}
	if len(warns) > 40 {
		warns = warns[len(warns)-40:]
	}
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	w.t.Logf("--- warnings of worker %s ---\n%s\n--- last log lines of worker %s ---\n%s",
		w.name, strings.Join(warns, "\n"), w.name, strings.Join(lines, "\n"))
}

// logEntries returns the worker's JSON log records whose msg is msg.
func logEntries(t *testing.T, path, msg string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// currentLeader asks the running nodes (all when ids is empty) who leads
// and returns the leader if one of them says it is itself.
func (c *cluster) currentLeader(ids ...uint64) (uint64, bool) {
	if len(ids) == 0 {
		for i := uint64(1); i <= uint64(len(c.nodes)); i++ {
			ids = append(ids, i)
		}
	}
	for _, id := range ids {
		if c.nodes[id].cmd == nil {
			continue
		}
		if ci, err := c.nodes[id].info(); err == nil && ci.LeaderID == id {
			return id, true
		}
	}
	return 0, false
}

// leaderWorkers lists the workers as the leader sees them (liveness is the
// leader's); ok is false when there is no leader or it did not answer.
func (c *cluster) leaderWorkers(ids ...uint64) (ws map[string]client.Worker, lead uint64, ok bool) {
	lead, ok = c.currentLeader(ids...)
	if !ok {
		return nil, 0, false
	}
	cl, err := client.New(client.Config{Endpoints: []string{c.nodes[lead].endpoint()}, Timeout: 5 * time.Second})
	if err != nil {
		return nil, 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := cl.Workers(ctx, "")
	if err != nil || list.Source != "leader" {
		return nil, 0, false
	}
	ws = map[string]client.Worker{}
	for _, w := range list.Workers {
		ws[w.ID] = w
	}
	return ws, lead, true
}

// waitWorker waits until the leader reports worker id in state and returns it.
func (c *cluster) waitWorker(id, state string, timeout time.Duration, ids ...uint64) client.Worker {
	c.t.Helper()
	return c.waitWorkerEpoch(id, state, 0, timeout, ids...)
}

// waitWorkerEpoch is waitWorker that also wants the given epoch (0: any).
func (c *cluster) waitWorkerEpoch(id, state string, epoch uint64, timeout time.Duration, ids ...uint64) client.Worker {
	c.t.Helper()
	var got client.Worker
	require.Eventually(c.t, func() bool {
		ws, _, ok := c.leaderWorkers(ids...)
		w, found := ws[id]
		got = w
		return ok && found && w.State == state && (epoch == 0 || w.Epoch == epoch)
	}, timeout, 20*time.Millisecond, "worker %s never became %s at epoch %d (last: %+v)", id, state, epoch, got)
	return got
}
