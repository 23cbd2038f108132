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

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

func TestWorker_RegistersAndShowsAlive(t *testing.T) {
	wc := newWorkerCluster(t, 3, nil)
	w := wc.startWorker("", func(c *WorkerConfig) {
		c.Labels = map[string]string{"zone": "a"}
		c.CPUMillis, c.MemoryMB = 3000, 2048
		c.HTTPAddr = "127.0.0.1:0"
	})
	wc.waitAlive(w)
	lead := wc.leaderNode()
	st := w.Status()
	require.Equal(t, uint64(1), st.Epoch)
	require.Equal(t, lead.Term(), st.ControllerEpoch)

	// Every controller has the registration; the id was kept in the data dir.
	for _, id := range wc.ids() {
		require.Eventually(t, func() bool { return replicated(wc.node(id), w.ID()).State == metadata.WorkerAlive },
			5*time.Second, 5*time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(w.dataDir, workerIDFile))
	require.NoError(t, err)
	require.Equal(t, w.ID()+"\n", string(b))

	// The leader's API shows liveness and load.
	var got workerJSON
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
	require.Equal(t, map[string]string{"zone": "a", LimitsLabel: "not-enforced"}, got.Labels)
	require.Equal(t, capacityJSON{CPUMillis: 3000, MemoryMB: 2048}, got.Capacity)
	require.Equal(t, uint64(250), got.Load.CPUMillis)
	require.Equal(t, uint64(1), got.Load.RunningTasks)
	require.NotNil(t, got.LastHeartbeatAgeMS)
	require.Less(t, *got.LastHeartbeatAgeMS, testSessionTimeout.Milliseconds())
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
	require.Positive(t, testutil.ToFloat64(lead.workers.met.registrations))
}

// The leader reads each session through a small buffer
// (sessionReadBuffer): a registration bigger than that must arrive whole.
func TestWorker_RegistrationLargerThanTheSessionReadBufferArrivesWhole(t *testing.T) {
	labels := map[string]string{}
	for i := range 8 {
		labels[fmt.Sprintf("label-%d", i)] = strings.Repeat(string(rune('a'+i)), 200)
	}
	frame, err := transport.AppendWorkerFrame(nil, &transport.Register{WorkerID: "w", Incarnation: "i", Labels: labels})
	require.NoError(t, err)
	require.Greater(t, len(frame), 2*sessionReadBuffer)

	wc := newWorkerCluster(t, 1, nil)
	w := wc.startWorker("", func(c *WorkerConfig) { c.Labels = labels })
	wc.waitAlive(w)
	var got workerJSON
	require.Eventually(t, func() bool {
		view := getWorkers(t, wc.leaderNode())
		if len(view.Workers) != 1 {
			return false
		}
		got = view.Workers[0]
		return true
	}, 5*time.Second, 5*time.Millisecond)
	labels[LimitsLabel] = "not-enforced"
	require.Equal(t, labels, got.Labels)
}

func TestWorker_CrashIsFencedWithinTimeoutAndRestartGetsHigherEpoch(t *testing.T) {
	wc := newWorkerCluster(t, 3, nil)
	w := wc.startWorker("", nil)
	wc.waitAlive(w)
	lead := wc.leaderNode()

	w.halt() // kill -9: no goodbye
	killed := time.Now()
	require.Eventually(t, func() bool { return replicated(lead, w.ID()).State == metadata.WorkerFenced },
		5*time.Second, 2*time.Millisecond)
	took := time.Since(killed)
	t.Logf("fenced %s after the crash (session timeout %s)", took, testSessionTimeout)
	require.GreaterOrEqual(t, took, testSessionTimeout-testHeartbeat, "fenced before the session timeout")
	require.Less(t, took, testSessionTimeout+testHeartbeat+lead.workers.checkEvery()+200*time.Millisecond,
		"not fenced within session timeout + one heartbeat interval")
	waitFencings(t, lead, 1)
	require.Equal(t, "session_timeout", replicated(lead, w.ID()).Reason)

	// The same data dir comes back as the same id with a higher epoch.
	again := wc.startWorker(w.dataDir, nil)
	wc.waitAlive(again)
	require.Equal(t, w.ID(), again.ID())
	require.Equal(t, uint64(2), again.Status().Epoch)
	require.Equal(t, metadata.WorkerAlive, replicated(lead, w.ID()).State)
	require.NotEqual(t, w.Status().Incarnation, again.Status().Incarnation)
}

func TestWorker_SecondProcessWithSameIDRefusedWhileFirstIsLive(t *testing.T) {
	wc := newWorkerCluster(t, 3, nil)
	first := wc.startWorker("", nil)
	wc.waitAlive(first)
	lead := wc.leaderNode()

	// A copy of the data dir: the same id, another process.
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(first.dataDir, workerIDFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, workerIDFile), b, 0o600))
	second := wc.startWorker(dir, nil)
	require.Equal(t, first.ID(), second.ID())
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(lead.workers.met.registrationsRefused.WithLabelValues("duplicate")) >= 3
	}, 5*time.Second, 5*time.Millisecond)
	require.False(t, second.Status().Alive)
	require.True(t, first.Status().Alive)
	require.Equal(t, uint64(1), replicated(lead, first.ID()).Epoch)

	// Once the first is gone and fenced, the second takes the id over.
	first.halt()
	wc.waitAlive(second)
	require.Equal(t, uint64(2), second.Status().Epoch)
	waitFencings(t, lead, 1)
}

func TestWorker_GracefulLeaveIsMarkedLeftAtOnce(t *testing.T) {
	wc := newWorkerCluster(t, 3, nil)
	w := wc.startWorker("", nil)
	wc.waitAlive(w)
	lead := wc.leaderNode()
	start := time.Now()
	require.NoError(t, w.Close())
	// Close returns once the leader acknowledged the leave, i.e. after the
	// leave was committed and applied on the leader.
	require.Less(t, time.Since(start), testSessionTimeout/2)
	got := replicated(lead, w.ID())
	require.Equal(t, metadata.WorkerLeft, got.State)
	require.Equal(t, "shutdown", got.Reason)
	require.Equal(t, 1.0, testutil.ToFloat64(lead.workers.met.leaves))
	require.Zero(t, fencings(lead))
	require.Empty(t, w.fencedTimes())
}

func TestWorker_RejectsBadConfig(t *testing.T) {
	_, err := StartWorker(WorkerConfig{Controllers: []string{"x:1"}, TLSDir: "t"})
	require.ErrorContains(t, err, "--data-dir")
	_, err = StartWorker(WorkerConfig{DataDir: t.TempDir(), TLSDir: "t"})
	require.ErrorContains(t, err, "--controllers")
	_, err = StartWorker(WorkerConfig{DataDir: t.TempDir(), Controllers: []string{"x:1"}})
	require.ErrorContains(t, err, "--tls-dir")
	dir := t.TempDir()
	_, err = resolveWorkerID(dir, "gpu-1")
	require.NoError(t, err)
	_, err = resolveWorkerID(dir, "gpu-2")
	require.ErrorContains(t, err, "belongs to worker gpu-1")
	id, err := resolveWorkerID(dir, "")
	require.NoError(t, err)
	require.Equal(t, "gpu-1", id)
	_, err = resolveWorkerID(t.TempDir(), "bad id!")
	require.Error(t, err)
	gen, err := resolveWorkerID(t.TempDir(), "")
	require.NoError(t, err)
	require.NoError(t, ValidateWorkerID(gen))

	labels, err := ParseLabels("zone=a, gpu=yes")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"zone": "a", "gpu": "yes"}, labels)
	_, err = ParseLabels("zone")
	require.Error(t, err)
	_, err = ParseLabels("a=1,a=2")
	require.Error(t, err)
}

// A leader that answers late but still answers is overloaded, not gone:
// probing the other controllers then only adds handshakes to the load
// (every worker at once). Only a silent connection triggers a probe.
func TestWorker_ProbesOnlyASilentLeader(t *testing.T) {
	now := time.Now()
	iv := time.Second
	w := &Worker{cfg: WorkerConfig{HeartbeatInterval: iv}, conn: &wconn{}, pending: map[uint64]time.Time{}}
	w.pending[7] = now.Add(-3 * iv / 2) // unanswered for 1.5 intervals

	w.conn.lastRecv = now.Add(-iv / 3) // but an older heartbeat's ack just came
	require.False(t, w.leaderSilent(now), "late answers mean a slow leader: no probe")

	w.conn.lastRecv = now.Add(-6 * iv / 5)
	require.True(t, w.leaderSilent(now), "nothing for more than an interval: probe")

	clear(w.pending)
	require.False(t, w.leaderSilent(now), "nothing unanswered: nothing to probe about")
}
