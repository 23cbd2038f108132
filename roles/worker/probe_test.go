package worker

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// blockStream accepts writes and blocks reads until it is closed, as an
// open connection on which nothing arrives.
type blockStream struct {
	closeCountStream
	once sync.Once
	done chan struct{}
}

func newBlockStream() *blockStream { return &blockStream{done: make(chan struct{})} }

func (s *blockStream) Read([]byte) (int, error) { <-s.done; return 0, io.EOF }
func (s *blockStream) Close() error {
	s.closed++
	s.once.Do(func() { close(s.done) })
	return nil
}

// recordDialer hands out blockStreams and remembers whom it dialed.
type recordDialer struct {
	mu     sync.Mutex
	dialed []string
}

func (d *recordDialer) DialStream(_ context.Context, addr string) (transport.Stream, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	d.mu.Unlock()
	return newBlockStream(), nil
}
func (d *recordDialer) Close() error { return nil }

// probeWorker is a live worker whose session's connection (to "a") has
// been silent for an interval, with standbys to "b" and "c".
func probeWorker(t *testing.T, now time.Time) (*Worker, map[string]*blockStream) {
	iv := time.Second
	life, cancel := context.WithCancel(context.Background())
	streams := map[string]*blockStream{"a": newBlockStream(), "b": newBlockStream(), "c": newBlockStream()}
	w := &Worker{cfg: Config{HeartbeatInterval: iv, DialTimeout: 2 * time.Second, Controllers: []string{"a", "b", "c"}},
		alive: true, epoch: 1, highestCtrl: 5, ackedByCtrl: 5,
		conn:    &wconn{id: 1, addr: "a", s: streams["a"], lastRecv: now.Add(-iv)},
		standby: map[string]*wconn{"b": {id: 2, addr: "b", s: streams["b"]}, "c": {id: 3, addr: "c", s: streams["c"]}},
		pending: map[uint64]time.Time{1: now.Add(-iv)}, seq: 1, connSeq: 3,
		met: newWorkerAgentMetrics(nil), log: slog.New(slog.DiscardHandler), load: func() transport.WorkerLoad { return transport.WorkerLoad{} },
		dialer: &recordDialer{}, dialc: make(chan dialResult, 1), life: life, stop: context.Background(),
		kickT: time.NewTimer(time.Hour), fenceT: time.NewTimer(time.Hour), silentT: time.NewTimer(time.Hour)}
	t.Cleanup(func() { cancel(); w.kickT.Stop(); w.fenceT.Stop(); w.silentT.Stop() })
	return w, streams
}

// A controller asked who leads that stays silent too (its connection
// crossed a partition and QUIC backs off, or it is down as well) is given
// up on after silentAfter: its connection is closed and the next standby
// is asked. Waiting on it spent a worker's whole self-fence margin.
func TestWorker_ASilentProbeIsAbandonedForTheNextStandby(t *testing.T) {
	now := time.Now()
	w, streams := probeWorker(t, now)
	w.startProbe(nil, now)
	require.Equal(t, "b", w.probe.addr)
	require.Equal(t, 1, streams["b"].writes, "the probe was not asked")

	w.maybeAbandonProbe(now.Add(w.silentAfter() / 2))
	require.Equal(t, "b", w.probe.addr, "abandoned before its answer was due")

	w.maybeAbandonProbe(now.Add(w.silentAfter()))
	require.NotNil(t, w.probe)
	require.Equal(t, "c", w.probe.addr, "the next standby was not asked")
	require.Equal(t, 1, streams["b"].closed, "the silent probe's connection stays open")
	require.Equal(t, 1, streams["c"].writes)
	require.Equal(t, 1.0, testutil.ToFloat64(w.met.probesAbandoned))

	// One that answers, even late, is kept.
	w.probe.lastRecv = now.Add(w.silentAfter() + time.Millisecond)
	w.maybeAbandonProbe(now.Add(3 * w.silentAfter()))
	require.Equal(t, "c", w.probe.addr)
}

// With no standby left, the silent probe's controller is dialed again,
// last, on a new connection, among the probe's targets.
func TestWorker_ASilentProbeWithNoStandbyLeftDialsAnew(t *testing.T) {
	now := time.Now()
	w, _ := probeWorker(t, now)
	delete(w.standby, "c")
	w.startProbe(nil, now)
	require.Equal(t, "b", w.probe.addr)
	w.maybeAbandonProbe(now.Add(w.silentAfter()))
	require.Nil(t, w.probe)
	require.True(t, w.dialing, "no dial started")
	r := <-w.dialc
	require.NoError(t, r.err)
	require.Equal(t, []string{"c"}, w.dialer.(*recordDialer).dialed, "the other controller first, hedged")
	w.onDial(r)
	require.Equal(t, "c", w.probe.addr, "the dialed connection is the new probe")

	// A connection just dialed has lost nothing: a controller slow to
	// answer on it is busy, and gets as long as the handshake did.
	asked := w.probeAsked
	w.maybeAbandonProbe(asked.Add(w.silentAfter()))
	require.Equal(t, "c", w.probe.addr, "a probe on a connection just dialed for it was abandoned at once")
	w.maybeAbandonProbe(asked.Add(w.cfg.DialTimeout))
	require.Nil(t, w.probe)
	require.True(t, w.dialing, "no dial started")
}

// A standby whose keep-alive went unanswered is asked who leads only when
// no other is there.
func TestWorker_ProbeAsksAnAnsweringStandbyFirst(t *testing.T) {
	now := time.Now()
	w, _ := probeWorker(t, now)
	b := w.standby["b"]
	b.lastRecv, b.lastSent = now.Add(-3*time.Second), now.Add(-2*time.Second)
	w.standby["c"].lastRecv, w.standby["c"].lastSent = now.Add(-2*time.Second+time.Millisecond), now.Add(-2*time.Second)
	w.startProbe(nil, now)
	require.Equal(t, "c", w.probe.addr)

	w.closeProbe()
	w.startProbe(nil, now)
	require.Equal(t, "b", w.probe.addr, "an unanswered standby is still better than a handshake")
}

// A probe's answer naming as leader the controller the session's silent
// connection already reaches, in a term that never acknowledged this
// worker, means the connection is what is broken (a standby that crossed
// a partition, taken as the session's connection): the worker connects to
// that leader anew instead of asking again until it fences itself. In the
// term that did acknowledge it, the leader is only slow: ask again.
func TestWorker_ALeaderSilentOnItsConnectionIsReachedOnANewOne(t *testing.T) {
	now := time.Now()
	w, streams := probeWorker(t, now)
	w.startProbe(nil, now)
	w.onProbeMessage(&transport.Redirect{ControllerEpoch: 5, LeaderAddr: "a"}, now)
	require.Equal(t, "b", w.probe.addr, "same term: the probe asks again")
	require.False(t, w.dialing)

	w.onProbeMessage(&transport.Redirect{ControllerEpoch: 6, LeaderAddr: "a"}, now)
	require.True(t, w.dialing, "a newer term names the silent connection's controller: no new connection")
	r := <-w.dialc
	require.Equal(t, []string{"a"}, w.dialer.(*recordDialer).dialed)
	require.NotNil(t, w.standby["b"], "the probe's working connection stays a standby")
	w.onDial(r)
	require.Equal(t, "a", w.probe.addr)
	w.onInbound(inbound{connID: w.probe.id, msg: &transport.HeartbeatAck{Epoch: 1, Seq: w.seq, ControllerEpoch: 6}})
	require.Equal(t, "a", w.conn.addr)
	require.NotEqual(t, uint64(1), w.conn.id, "still the old connection")
	require.Equal(t, 1, streams["a"].closed, "the broken connection stays open")
	requireRedialLater(t, w, now)
}

// A standby's acknowledgement that moves the session closes the old
// leader's connection when that leader had gone silent on it: the
// connection may have crossed a partition, and as a standby it would be
// asked who leads at the next failover.
func TestWorker_AStandbysAckClosesASilentOldLeadersConnection(t *testing.T) {
	now := time.Now()
	w, streams := probeWorker(t, now)
	w.onInbound(inbound{connID: 2, msg: &transport.Redirect{ControllerEpoch: 6, LeaderID: 2, LeaderAddr: "b"}})
	seq := w.standby["b"].pingSeq
	w.onInbound(inbound{connID: 2, msg: &transport.HeartbeatAck{Epoch: 1, Seq: seq, ControllerEpoch: 6}})
	require.Equal(t, "b", w.conn.addr)
	require.Equal(t, 1, streams["a"].closed, "the silent old leader's connection was kept")
	require.Nil(t, w.standby["a"])
	requireRedialLater(t, w, now)
}

// requireRedialLater checks that the next standby dial comes after a
// random [T/2, 2T], as after a lost standby, not at once: at scale, every
// worker redialing the old leader together is a herd at its restart.
func requireRedialLater(t *testing.T, w *Worker, now time.Time) {
	t.Helper()
	tt := 2 * w.standbyPingEvery()
	require.False(t, w.standbyAt.Before(now.Add(tt/2)), "the old leader's standby is dialed again too soon")
	require.False(t, w.standbyAt.After(time.Now().Add(2*tt)), "the old leader's standby is dialed again too late")
}
