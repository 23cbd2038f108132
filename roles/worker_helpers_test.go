package roles

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// Worker tests run whole controllers and workers in one process over the
// in-memory network: the same code as production, with partitions under
// the test's control. Times are scaled down: heartbeats every 50 ms, a
// 1 s session timeout (self-fence after 600 ms).
const (
	testHeartbeat      = 50 * time.Millisecond
	testSessionTimeout = time.Second
	// workerNetBase is the first MemNetwork id used by workers.
	workerNetBase = 100
)

// workerCluster is a memCluster whose controllers accept workers.
type workerCluster struct {
	*memCluster
	nextNet uint64
}

// testWorker is an in-process worker plus what its hooks observed.
type testWorker struct {
	*Worker
	netID   uint64
	dataDir string

	mu      sync.Mutex
	fenced  []time.Time // OnFenced calls
	aliveAt []time.Time // OnAlive calls
}

func (tw *testWorker) fencedTimes() []time.Time {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return append([]time.Time(nil), tw.fenced...)
}

func newWorkerCluster(t *testing.T, n int, tweak func(*ControllerConfig)) *workerCluster {
	t.Helper()
	mc := &memCluster{t: t, net: transport.NewMemNetwork(7), nodes: map[uint64]*Controller{},
		cfgs: map[uint64]ControllerConfig{}, leaders: map[uint64]map[uint64]bool{}, stop: make(chan struct{})}
	// Like QUIC's idle timeout relative to the default session timeout.
	mc.net.SetStreamIdleTimeout(testSessionTimeout + testSessionTimeout/5)
	wc := &workerCluster{memCluster: mc, nextNet: workerNetBase}
	peers := map[uint64]string{}
	for i := 1; i <= n; i++ {
		peers[uint64(i)] = fmt.Sprintf("mem:%d", i)
	}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		cfg := ControllerConfig{
			NodeID: id, DataDir: t.TempDir(), Peers: peers, NoSync: true,
			TickInterval: 20 * time.Millisecond, RequestTimeout: 3 * time.Second, SessionTimeout: testSessionTimeout,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		if tweak != nil {
			tweak(&cfg)
		}
		mc.cfgs[id] = cfg
		wc.startController(id)
	}
	mc.wg.Add(1)
	go mc.watchLeaders()
	t.Cleanup(mc.close)
	return wc
}

// startController (re)starts a controller with a fresh worker listener on
// its cluster address, so redirects to it resolve.
func (wc *workerCluster) startController(id uint64) {
	cfg := wc.cfgs[id]
	ln, err := wc.net.ListenStreams(id, cfg.Peers[id])
	require.NoError(wc.t, err)
	cfg.WorkerListener = ln
	wc.cfgs[id] = cfg
	wc.start(id)
}

func (wc *workerCluster) controllerAddrs() []string {
	var out []string
	for _, id := range wc.ids() {
		out = append(out, wc.cfgs[id].Peers[id])
	}
	return out
}

// startWorker starts a worker with the given data dir ("" = new).
func (wc *workerCluster) startWorker(dataDir string, tweak func(*WorkerConfig)) *testWorker {
	wc.t.Helper()
	if dataDir == "" {
		dataDir = wc.t.TempDir()
	}
	wc.nextNet++
	tw := &testWorker{netID: wc.nextNet, dataDir: dataDir}
	cfg := WorkerConfig{
		DataDir: dataDir, Controllers: wc.controllerAddrs(), HeartbeatInterval: testHeartbeat,
		DialTimeout: 500 * time.Millisecond, Dialer: wc.net.StreamDialer(tw.netID),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Load: func() transport.WorkerLoad {
			return transport.WorkerLoad{CPUMillis: 250, MemoryMB: 64, RunningTasks: 1}
		},
		OnFenced: func(uint64) {
			tw.mu.Lock()
			tw.fenced = append(tw.fenced, time.Now())
			tw.mu.Unlock()
		},
		OnAlive: func(uint64) {
			tw.mu.Lock()
			tw.aliveAt = append(tw.aliveAt, time.Now())
			tw.mu.Unlock()
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	w, err := StartWorker(cfg)
	require.NoError(wc.t, err)
	tw.Worker = w
	wc.t.Cleanup(func() { w.halt() })
	return tw
}

func (wc *workerCluster) waitAlive(tws ...*testWorker) {
	wc.t.Helper()
	for _, tw := range tws {
		require.Eventually(wc.t, func() bool { return tw.Status().Alive }, 10*time.Second, 5*time.Millisecond,
			"worker %s never became alive", tw.ID())
	}
}

// leaderNode waits for an agreed leader among the running controllers.
func (wc *workerCluster) leaderNode() *Controller {
	wc.t.Helper()
	var running []uint64
	wc.mu.Lock()
	for id := range wc.nodes {
		running = append(running, id)
	}
	wc.mu.Unlock()
	sort.Slice(running, func(i, j int) bool { return running[i] < running[j] })
	return wc.node(wc.waitLeader(running...))
}

// replicated returns the worker as the given controller's state has it.
func replicated(c *Controller, id string) metadata.Worker {
	w, _ := c.State().Worker(id)
	return w
}

// getWorkers calls GET /v1/workers on c's handler.
func getWorkers(t *testing.T, c *Controller) workersJSON {
	t.Helper()
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/workers", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out workersJSON
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return out
}

// waitFencings polls the leader's fencings counter, which moves just after
// the fence it counts has applied.
func waitFencings(t *testing.T, c *Controller, n float64) {
	t.Helper()
	require.Eventually(t, func() bool { return fencings(c) == n }, 5*time.Second, 2*time.Millisecond,
		"fencings counter: %v, want %v", fencings(c), n)
}

func fencings(c *Controller) float64 {
	return testutil.ToFloat64(c.workers.met.fencings.WithLabelValues("session_timeout"))
}
