package worker

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// A worker's dialer turns QUIC's keep-alive pings off (NewDialer), so a
// standby lives only as long as its own pings come well within the
// connection's idle timeout, whatever the leader's session timeout.
func TestStandbyPingEvery_StaysWithinTheIdleTimeout(t *testing.T) {
	for _, tc := range []struct{ timeout, want time.Duration }{
		{0, transport.DefaultSessionTimeout / 2},
		{10 * time.Second, 5 * time.Second},
		{3 * time.Second, 1500 * time.Millisecond},
		{60 * time.Second, transport.MaxIdleTimeout / 3},
	} {
		w := &Worker{timeout: tc.timeout}
		require.Equal(t, tc.want, w.standbyPingEvery(), "session timeout %s", tc.timeout)
		require.LessOrEqual(t, 3*w.standbyPingEvery(), transport.MaxIdleTimeout)
	}
}

// A lost standby is dialed again within [T/2, 2T]: late enough that the
// workers of a restarted controller do not all dial it in the second it
// comes back, soon enough that it holds their standbys before it may lead.
func TestStandbyRedialAfter_WithinHalfToTwoSessionTimeouts(t *testing.T) {
	w := &Worker{timeout: 10 * time.Second}
	for range 1000 {
		d := w.standbyRedialAfter(false)
		require.GreaterOrEqual(t, d, 5*time.Second)
		require.LessOrEqual(t, d, 20*time.Second)
		first := w.standbyRedialAfter(true)
		require.GreaterOrEqual(t, first, time.Duration(0))
		require.LessOrEqual(t, first, 10*time.Second)
	}
}

// writeStream accepts every write and counts them.
type writeStream struct {
	nopStream
	writes int
}

func (s *writeStream) Write(b []byte) (int, error)      { s.writes++; return len(b), nil }
func (s *writeStream) SetWriteDeadline(time.Time) error { return nil }

// A new leader's beckon (an unsolicited redirect, sequence 0) makes the
// worker ping that standby at once; on the session's own stream it is
// ignored, so a healthy session is never dropped for it, and an old
// leader's beckon is ignored too.
func TestWorker_BeckonPingsTheStandbyAndLeavesTheSessionAlone(t *testing.T) {
	session, standby := &writeStream{}, &writeStream{}
	w := &Worker{cfg: Config{HeartbeatInterval: time.Second}, alive: true, epoch: 1, highestCtrl: 5, ackedByCtrl: 5,
		conn:    &wconn{id: 1, addr: "a", s: session},
		standby: map[string]*wconn{"b": {id: 2, addr: "b", s: standby}},
		pending: map[uint64]time.Time{},
		met:     newWorkerAgentMetrics(nil), log: slog.New(slog.DiscardHandler), kickT: time.NewTimer(time.Hour)}
	defer w.kickT.Stop()

	w.onInbound(inbound{connID: 1, msg: &transport.Redirect{ControllerEpoch: 6, LeaderID: 1, LeaderAddr: "a"}})
	require.Equal(t, "a", w.conn.addr, "the session stream was dropped for a beckon")
	require.Len(t, w.standby, 1)
	require.Zero(t, session.writes)

	w.onInbound(inbound{connID: 2, msg: &transport.Redirect{ControllerEpoch: 5, LeaderID: 2, LeaderAddr: "b"}})
	require.Zero(t, standby.writes, "a beckon no newer than the acknowledging leader's term")

	w.onInbound(inbound{connID: 2, msg: &transport.Redirect{ControllerEpoch: 6, LeaderID: 2, LeaderAddr: "b"}})
	require.Equal(t, 1, standby.writes, "the standby was not pinged")
	require.NotZero(t, w.standby["b"].pingSeq)
	require.Equal(t, "a", w.conn.addr, "the session moves on the ping's acknowledgement, not before")
}

// closeCountStream is a writeStream that counts its Close calls.
type closeCountStream struct {
	writeStream
	closed int
}

func (s *closeCountStream) Close() error { s.closed++; return nil }

// A standby's acknowledgement that moves the session (after a beckon)
// while a probe, taken from the standbys when the old leader fell silent,
// still waits for its answer: the probe's connection works, so it goes
// back to the standbys. Closed, it cost a new handshake with a healthy
// controller after the failover (TestWorker_FailoverResumesOnStandby...
// failed one run in eight that way).
func TestWorker_AStandbysAckParksTheProbe(t *testing.T) {
	session, standby, probe := &closeCountStream{}, &closeCountStream{}, &closeCountStream{}
	w := &Worker{cfg: Config{HeartbeatInterval: time.Second}, alive: true, epoch: 1, highestCtrl: 5, ackedByCtrl: 5,
		conn:    &wconn{id: 1, addr: "a", s: session},
		standby: map[string]*wconn{"b": {id: 2, addr: "b", s: standby}},
		probe:   &wconn{id: 3, addr: "c", s: probe},
		pending: map[uint64]time.Time{},
		met:     newWorkerAgentMetrics(nil), log: slog.New(slog.DiscardHandler), kickT: time.NewTimer(time.Hour),
		fenceT: time.NewTimer(time.Hour), silentT: time.NewTimer(time.Hour), stop: context.Background()}
	defer w.kickT.Stop()
	defer w.fenceT.Stop()
	defer w.silentT.Stop()

	w.onInbound(inbound{connID: 2, msg: &transport.Redirect{ControllerEpoch: 6, LeaderID: 2, LeaderAddr: "b"}})
	seq := w.standby["b"].pingSeq
	require.NotZero(t, seq)
	w.onInbound(inbound{connID: 2, msg: &transport.HeartbeatAck{Epoch: 1, Seq: seq, ControllerEpoch: 6}})

	require.Equal(t, "b", w.conn.addr, "the acknowledging standby carries the session")
	require.Nil(t, w.probe)
	require.Zero(t, probe.closed, "the probe's working connection was closed")
	require.Equal(t, []string{"a", "c"}, slices.Sorted(maps.Keys(w.standby)))
	require.Zero(t, session.closed+standby.closed)
}
