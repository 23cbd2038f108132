package roles

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
	"github.com/corral-dev/corral/roles/worker"
	"github.com/corral-dev/corral/transport"
)

func TestWorker_RegistersAndShowsAlive(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	w := wc.StartWorker("", func(c *worker.Config) {
		c.Labels = map[string]string{"zone": "a"}
		c.CPUMillis, c.MemoryMB = 3000, 2048
		c.HTTPAddr = "127.0.0.1:0"
	})
	wc.WaitAlive(w)
	lead := wc.Leader()
	st := w.Status()
	require.Equal(t, uint64(1), st.Epoch)
	require.Equal(t, lead.Term(), st.ControllerEpoch)

	// Every controller has the registration; the id was kept in the data dir.
	for _, id := range wc.IDs() {
		require.Eventually(t, func() bool { return replicated(wc.Node(id), w.ID()).State == metadata.WorkerAlive },
			5*time.Second, 5*time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(w.DataDir, worker.IDFile))
	require.NoError(t, err)
	require.Equal(t, w.ID()+"\n", string(b))

	// The leader's API shows liveness and load.
	var got client.Worker
	require.Eventually(t, func() bool {
		view := getWorkers(t, lead)
		if len(view.Workers) != 1 || view.Workers[0].Load == nil {
			return false
		}
		got = view.Workers[0]
		return view.Source == "leader"
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, "alive", got.State)
	require.Equal(t, uint64(1), got.Epoch)
	require.Equal(t, map[string]string{"zone": "a", worker.LimitsLabel: "not-enforced", metadata.MaxAllocsLabel: "100"}, got.Labels)
	require.Equal(t, client.WorkerCapacity{CPUMillis: 3000, MemoryMB: 2048}, got.Capacity)
	require.Equal(t, uint64(250), got.Load.CPUMillis)
	require.Equal(t, uint64(1), got.Load.RunningTasks)
	require.NotNil(t, got.LastHeartbeatAgeMS)
	require.Less(t, *got.LastHeartbeatAgeMS, testcluster.SessionTimeout.Milliseconds())
	require.NotEmpty(t, got.RegisteredAt)

	rec := httptest.NewRecorder()
	lead.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/workers/"+w.ID(), nil))
	require.Equal(t, http.StatusOK, rec.Code)
	rec = httptest.NewRecorder()
	lead.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/workers/nobody", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
	rec = httptest.NewRecorder()
	lead.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/cluster", nil))
	var cl struct {
		PID     int            `json:"pid"`
		Workers map[string]int `json:"workers"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &cl))
	require.Equal(t, os.Getpid(), cl.PID)
	require.Equal(t, 1, cl.Workers["alive"])

	// The worker's own HTTP server.
	resp, err := http.Get("http://" + w.HTTPAddr() + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Positive(t, testcluster.Metric(t, lead.Registry(), "corral_workers_registrations_total"))
}

// The leader reads each session through a small buffer
// (controller.SessionReadBuffer): a registration bigger than that must arrive whole.
func TestWorker_RegistrationLargerThanTheSessionReadBufferArrivesWhole(t *testing.T) {
	labels := map[string]string{}
	for i := range 8 {
		labels[fmt.Sprintf("label-%d", i)] = strings.Repeat(string(rune('a'+i)), 200)
	}
	frame, err := transport.AppendWorkerFrame(nil, &transport.Register{WorkerID: "w", Incarnation: "i", Labels: labels})
	require.NoError(t, err)
	require.Greater(t, len(frame), 2*controller.SessionReadBuffer)

	wc := testcluster.New(t, 1, nil)
	w := wc.StartWorker("", func(c *worker.Config) { c.Labels = labels })
	wc.WaitAlive(w)
	var got client.Worker
	require.Eventually(t, func() bool {
		view := getWorkers(t, wc.Leader())
		if len(view.Workers) != 1 {
			return false
		}
		got = view.Workers[0]
		return true
	}, 5*time.Second, 5*time.Millisecond)
	labels[worker.LimitsLabel] = "not-enforced"
	labels[metadata.MaxAllocsLabel] = "100"
	require.Equal(t, labels, got.Labels)
}

func TestWorker_CrashIsFencedWithinTimeoutAndRestartGetsHigherEpoch(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	w := wc.StartWorker("", nil)
	wc.WaitAlive(w)
	lead := wc.Leader()

	w.Halt() // kill -9: no goodbye
	killed := time.Now()
	require.Eventually(t, func() bool { return replicated(lead, w.ID()).State == metadata.WorkerFenced },
		5*time.Second, 2*time.Millisecond)
	took := time.Since(killed)
	t.Logf("fenced %s after the crash (session timeout %s)", took, testcluster.SessionTimeout)
	require.GreaterOrEqual(t, took, testcluster.SessionTimeout-testcluster.Heartbeat, "fenced before the session timeout")
	require.Less(t, took, testcluster.SessionTimeout+testcluster.Heartbeat+lead.SessionCheckEvery()+200*time.Millisecond,
		"not fenced within session timeout + one heartbeat interval")
	waitFencings(t, lead, 1)
	require.Equal(t, "session_timeout", replicated(lead, w.ID()).Reason)

	// The same data dir comes back as the same id with a higher epoch.
	again := wc.StartWorker(w.DataDir, nil)
	wc.WaitAlive(again)
	require.Equal(t, w.ID(), again.ID())
	require.Equal(t, uint64(2), again.Status().Epoch)
	require.Equal(t, metadata.WorkerAlive, replicated(lead, w.ID()).State)
	require.NotEqual(t, w.Status().Incarnation, again.Status().Incarnation)
}

func TestWorker_SecondProcessWithSameIDRefusedWhileFirstIsLive(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	first := wc.StartWorker("", nil)
	wc.WaitAlive(first)
	lead := wc.Leader()

	// A copy of the data dir: the same id, another process.
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(first.DataDir, worker.IDFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, worker.IDFile), b, 0o600))
	second := wc.StartWorker(dir, nil)
	require.Equal(t, first.ID(), second.ID())
	require.Eventually(t, func() bool {
		return testcluster.Metric(t, lead.Registry(), "corral_workers_registrations_refused_total", "duplicate") >= 3
	}, 5*time.Second, 5*time.Millisecond)
	require.False(t, second.Status().Alive)
	require.True(t, first.Status().Alive)
	require.Equal(t, uint64(1), replicated(lead, first.ID()).Epoch)

	// Once the first is gone and fenced, the second takes the id over.
	first.Halt()
	wc.WaitAlive(second)
	require.Equal(t, uint64(2), second.Status().Epoch)
	waitFencings(t, lead, 1)
}

func TestWorker_GracefulLeaveIsMarkedLeftAtOnce(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	w := wc.StartWorker("", nil)
	wc.WaitAlive(w)
	lead := wc.Leader()
	start := time.Now()
	require.NoError(t, w.Close())
	// Close returns once the leader acknowledged the leave, i.e. after the
	// leave was committed and applied on the leader.
	require.Less(t, time.Since(start), testcluster.SessionTimeout/2)
	got := replicated(lead, w.ID())
	require.Equal(t, metadata.WorkerLeft, got.State)
	require.Equal(t, "shutdown", got.Reason)
	require.Equal(t, 1.0, testcluster.Metric(t, lead.Registry(), "corral_workers_leaves_total"))
	require.Zero(t, fencings(t, lead))
	require.Empty(t, w.FencedTimes())
}
