package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

	// Silence counts from three quarters of an interval: a dead leader
	// is noticed before the next tick, a GC pause (under half an
	// interval) is not mistaken for death.
	clear(w.pending)
	w.pending[8] = now.Add(-iv / 2)
	w.conn.lastRecv = now.Add(-iv / 2)
	require.False(t, w.leaderSilent(now), "half an interval is a pause")
	w.pending[8] = now.Add(-4 * iv / 5)
	w.conn.lastRecv = now.Add(-4 * iv / 5)
	require.True(t, w.leaderSilent(now), "0.8 of an interval without an answer is silence")

	clear(w.pending)
	require.False(t, w.leaderSilent(now), "nothing unanswered: nothing to probe about")
}

// A controller that knows no new leader yet (the election is running), or
// that still names the silent leader, is asked again on the same probe
// connection within a quarter interval, not after two intervals: the
// worker learns the winner inside its self-fence margin.
func TestWorker_ProbeAsksAgainWhileNoNewLeaderIsKnown(t *testing.T) {
	now := time.Now()
	iv := time.Second
	probe := &wconn{addr: "other", s: nopStream{}}
	w := &Worker{cfg: Config{HeartbeatInterval: iv}, conn: &wconn{addr: "old", lastRecv: now.Add(-iv)},
		probe: probe, pending: map[uint64]time.Time{1: now.Add(-iv)}, standby: map[string]*wconn{},
		stop: context.Background(), met: newWorkerAgentMetrics(nil), kickT: time.NewTimer(time.Hour)}
	defer w.kickT.Stop()
	for i, m := range []*transport.Redirect{{}, {LeaderAddr: "old"}, {}, {}, {}} {
		w.onProbeMessage(m, now)
		require.NotNil(t, w.probe, "answer %d: the probe stays open", i)
		require.False(t, w.probeReask.IsZero(), "answer %d: asks again", i)
		wait := w.probeReask.Sub(now)
		require.LessOrEqual(t, wait, iv/4, "answer %d: asks again within a quarter interval", i)
		require.Positive(t, wait)
	}
	// The leader spoke up meanwhile: slow, not gone; stop asking.
	w.conn.lastRecv = now
	w.onProbeMessage(&transport.Redirect{LeaderAddr: "old"}, now)
	require.Nil(t, w.probe)
	require.True(t, w.probeAfter.After(now), "and leave the slow leader alone for a while")
	require.Same(t, probe, w.standby["other"], "the probe's connection works: it stays, as a standby")
}

// nopStream is a probe connection that is never written to here.
type nopStream struct{ transport.Stream }

func (nopStream) Close() error { return nil }

// OnLeaderAck marks the moment a session resumed on a new leader: the
// first acknowledgement from another address, or from the same address at
// a higher controller epoch (a restarted controller that won again), and
// only that one; the registration itself is not a resume.
func TestWorker_OnLeaderAckFiresOncePerNewLeader(t *testing.T) {
	type call struct {
		addr  string
		epoch uint64
	}
	var calls []call
	w := &Worker{cfg: Config{HeartbeatInterval: time.Second, OnLeaderAck: func(addr string, e uint64, at time.Time) {
		require.False(t, at.IsZero())
		calls = append(calls, call{addr, e})
	}}, log: slog.New(slog.DiscardHandler), met: newWorkerAgentMetrics(nil), pending: map[uint64]time.Time{},
		conn: &wconn{addr: "a"}, fenceT: time.NewTimer(time.Hour), silentT: time.NewTimer(time.Hour),
		timeout: transport.DefaultSessionTimeout}
	defer w.fenceT.Stop()
	defer w.silentT.Stop()
	w.regSeq, w.regSentAt = 1, time.Now()
	w.becomeAlive(&transport.Registered{Seq: 1, Epoch: 3, ControllerEpoch: 5})
	require.Equal(t, 5.0, testutil.ToFloat64(w.met.ackedCtrl), "the session is held where it registered")
	ack := func(addr string, ctrl uint64) {
		w.conn.addr = addr
		w.seq++
		w.pending[w.seq] = time.Now()
		w.onAck(&transport.HeartbeatAck{Seq: w.seq, Epoch: 3, ControllerEpoch: ctrl})
	}
	ack("a", 5)
	ack("a", 5)
	require.Empty(t, calls, "the registering leader's acks are no resume")
	ack("b", 6)
	ack("b", 6)
	require.Equal(t, []call{{"b", 6}}, calls, "once at the new leader")
	require.Equal(t, 6.0, testutil.ToFloat64(w.met.ackedCtrl), "the session is held at the new leader")
	ack("a", 7)
	require.Equal(t, []call{{"b", 6}, {"a", 7}}, calls, "the same address at a higher controller epoch is a new leader")
	require.Equal(t, 7.0, testutil.ToFloat64(w.met.ackedCtrl))
}

// After its leader's connection failed (a restarted controller resets it),
// a follower that has not noticed yet still names that leader. The worker
// does not dial it (a handshake and an unanswered heartbeat); it keeps the
// follower's connection as a standby and asks again soon. A redirect from a
// newer term is followed, even to that controller.
func TestWorker_RedirectToTheControllerThatJustFailedIsNotFollowedUntilANewTerm(t *testing.T) {
	newW := func() *Worker {
		return &Worker{cfg: Config{HeartbeatInterval: time.Second, Controllers: []string{"a", "b", "c"}},
			conn: &wconn{addr: "b", s: nopStream{}}, pending: map[uint64]time.Time{}, standby: map[string]*wconn{},
			stop: context.Background(), met: newWorkerAgentMetrics(nil), kickT: time.NewTimer(time.Hour),
			log: slog.New(slog.DiscardHandler), avoid: "a", avoidCtrl: 4, avoidAt: time.Now(), alive: true,
			dialing: true} // no real dial in this test
	}
	w := newW()
	defer w.kickT.Stop()
	b := w.conn
	w.onRedirect(&transport.Redirect{ControllerEpoch: 4, LeaderID: 1, LeaderAddr: "a"})
	require.Empty(t, w.preferred, "the failed leader is not followed")
	require.Same(t, b, w.standby["b"], "the follower's connection stays, as a standby")

	w2 := newW()
	defer w2.kickT.Stop()
	w2.onRedirect(&transport.Redirect{ControllerEpoch: 5, LeaderID: 1, LeaderAddr: "a"})
	require.Equal(t, "a", w2.preferred, "elected again in a newer term: followed")
	require.Empty(t, w2.avoid)

	w3 := newW()
	defer w3.kickT.Stop()
	w3.avoidAt = time.Now().Add(-4 * time.Second)
	w3.onRedirect(&transport.Redirect{ControllerEpoch: 4, LeaderID: 1, LeaderAddr: "a"})
	require.Equal(t, "a", w3.preferred, "named for longer than an election takes: the fault was ours, follow it")
}
