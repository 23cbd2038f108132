package worker

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/stretchr/testify/require"
)

func TestWorker_RejectsBadConfig(t *testing.T) {
	_, err := Start(Config{Controllers: []string{"x:1"}, TLSDir: "t"})
	require.ErrorContains(t, err, "--data-dir")
	_, err = Start(Config{DataDir: t.TempDir(), TLSDir: "t"})
	require.ErrorContains(t, err, "--controllers")
	_, err = Start(Config{DataDir: t.TempDir(), Controllers: []string{"x:1"}})
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
	require.NoError(t, metadata.ValidateWorkerID(gen))

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
	w := &Worker{cfg: Config{HeartbeatInterval: iv}, conn: &wconn{}, pending: map[uint64]time.Time{}}
	w.pending[7] = now.Add(-3 * iv / 2) // unanswered for 1.5 intervals

	w.conn.lastRecv = now.Add(-iv / 3) // but an older heartbeat's ack just came
	require.False(t, w.leaderSilent(now), "late answers mean a slow leader: no probe")

	w.conn.lastRecv = now.Add(-6 * iv / 5)
	require.True(t, w.leaderSilent(now), "nothing for more than an interval: probe")

	clear(w.pending)
	require.False(t, w.leaderSilent(now), "nothing unanswered: nothing to probe about")
}
