package testcluster

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/worker"
	"github.com/corral-dev/corral/transport"
)

// Worker is an in-process worker plus what its hooks observed.
type Worker struct {
	*worker.Worker
	// NetID is the worker's address on the in-memory network.
	NetID uint64
	// DataDir is where the worker keeps its id.
	DataDir string

	mu      sync.Mutex
	fenced  []time.Time // OnFenced calls
	aliveAt []time.Time // OnAlive calls
}

// FencedTimes returns when the worker fenced itself or was told it was
// fenced (its OnFenced calls).
func (w *Worker) FencedTimes() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.fenced...)
}

// AliveTimes returns when the worker's session became alive (OnAlive).
func (w *Worker) AliveTimes() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.aliveAt...)
}

// StartWorker starts a worker with the given data dir ("" = new) that
// reports a fixed load; tweak, when set, adjusts its config.
func (c *Cluster) StartWorker(dataDir string, tweak func(*worker.Config)) *Worker {
	c.t.Helper()
	if dataDir == "" {
		dataDir = c.t.TempDir()
	}
	tw := &Worker{NetID: c.NewNetID(), DataDir: dataDir}
	cfg := worker.Config{
		DataDir: dataDir, Controllers: c.ControllerAddrs(), HeartbeatInterval: Heartbeat,
		DialTimeout: 500 * time.Millisecond, Dialer: c.Net.StreamDialer(tw.NetID),
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
	w, err := worker.Start(cfg)
	require.NoError(c.t, err)
	tw.Worker = w
	c.t.Cleanup(w.Halt)
	return tw
}

// WaitAlive waits until every worker holds a live session.
func (c *Cluster) WaitAlive(ws ...*Worker) {
	c.t.Helper()
	for _, w := range ws {
		require.Eventually(c.t, func() bool { return w.Status().Alive }, 10*time.Second, 5*time.Millisecond,
			"worker %s never became alive", w.ID())
	}
}

// Metric returns the value of the counter or gauge name (a histogram's
// sample count) with the given
// label values (in the order the metric declares its labels) from reg, or
// 0 when no such series exists yet. Tests read metrics through the
// registry, as a scrape would, instead of reaching into a package.
func Metric(t *testing.T, reg prometheus.Gatherer, name string, labelValues ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !labelsMatch(m, labelValues) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

func labelsMatch(m *dto.Metric, values []string) bool {
	if len(values) != len(m.GetLabel()) {
		return false
	}
	for i, l := range m.GetLabel() {
		if l.GetValue() != values[i] {
			return false
		}
	}
	return true
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// CorralBinary builds corral once per test binary, for workers that run
// real tasks under `corral supervise`. It lives at a fixed path, replaced
// atomically, so runs reuse one file instead of leaving one behind each.
func CorralBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "corral-executor-test")
		if binErr = os.MkdirAll(dir, 0o755); binErr != nil {
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf("corral.%d", os.Getpid()))
		out, err := exec.Command("go", "build", "-o", tmp, "github.com/corral-dev/corral").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = filepath.Join(dir, "corral")
		binErr = os.Rename(tmp, binPath)
	})
	require.NoError(t, binErr)
	return binPath
}
