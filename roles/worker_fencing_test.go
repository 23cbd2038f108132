package roles

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/internal/testcluster"
	"github.com/corral-dev/corral/transport"
)

// rawPeer speaks the worker protocol by hand over a stream.
type rawPeer struct {
	t  *testing.T
	s  transport.Stream
	br *bufio.Reader
}

func newRawPeer(t *testing.T, s transport.Stream) *rawPeer {
	t.Cleanup(func() { s.Close() })
	return &rawPeer{t: t, s: s, br: bufio.NewReader(s)}
}

// rawPeerToLeader opens a worker stream to the current leader from the
// in-memory network address netID, to speak the protocol by hand.
func rawPeerToLeader(t *testing.T, wc *testcluster.Cluster, netID uint64) *rawPeer {
	lead := wc.Leader()
	s, err := wc.Net.StreamDialer(netID).DialStream(context.Background(), wc.Addr(lead.NodeID()))
	require.NoError(t, err)
	return newRawPeer(t, s)
}

func (p *rawPeer) send(m transport.WorkerMessage, preamble bool) {
	p.t.Helper()
	var b []byte
	if preamble {
		b = transport.WorkerPreamble()
	}
	b, err := transport.AppendWorkerFrame(b, m)
	require.NoError(p.t, err)
	_, err = p.s.Write(b)
	require.NoError(p.t, err)
}

// recv returns the next reply. A new leader's beckon (an unsolicited
// redirect, sequence 0, roles/controller/sessions/beckon.go) is no reply:
// a stream opened to a controller that just won its election gets one.
func (p *rawPeer) recv() transport.WorkerMessage {
	p.t.Helper()
	for {
		require.NoError(p.t, p.s.SetReadDeadline(time.Now().Add(10*time.Second)))
		m, _, err := transport.ReadWorkerMessage(p.br, nil)
		require.NoError(p.t, err)
		if r, ok := m.(*transport.Redirect); ok && r.Seq == 0 {
			continue
		}
		return m
	}
}

func TestWorker_ControllerRefusesStaleWorkerEpochOverTheTransport(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	lead := wc.Leader()
	p := rawPeerToLeader(t, wc, 999)

	register := func(seq, held uint64, first bool) *transport.Registered {
		for {
			p.send(&transport.Register{Seq: seq, WorkerID: "raw-1", Incarnation: "inc-a", HeldEpoch: held}, first)
			first = false
			switch m := p.recv().(type) {
			case *transport.Registered:
				return m
			case *transport.Refused:
				require.Equal(t, transport.RefuseNotReady, m.Code, m.Message) // the leader may still be loading
			default:
				t.Fatalf("unexpected answer %#v", m)
			}
		}
	}
	r1 := register(1, 0, true)
	require.Equal(t, uint64(1), r1.Epoch)
	require.Equal(t, lead.Term(), r1.ControllerEpoch)
	// Asking again without having held epoch 1 (the answer was lost): the
	// same epoch, nothing committed.
	again := register(2, 0, false)
	require.Equal(t, uint64(1), again.Epoch)
	require.Equal(t, uint64(1), lead.State().Workers()[0].Epoch)
	r2 := register(3, 1, false) // the same process, having given up epoch 1, registers again: it is superseded
	require.Equal(t, uint64(2), r2.Epoch)

	p.send(&transport.Heartbeat{Seq: 3, WorkerID: "raw-1", Incarnation: "inc-a", Epoch: 1}, false)
	ref, ok := p.recv().(*transport.Refused)
	require.True(t, ok, "a heartbeat with a superseded epoch was not refused")
	require.Equal(t, transport.RefuseStaleEpoch, ref.Code)
	require.Equal(t, uint64(3), ref.Seq)
	require.Equal(t, 1.0, testcluster.Metric(t, lead.Registry(), "corral_workers_stale_epoch_refused_total"))

	// The wrong incarnation with the right epoch is refused too.
	p.send(&transport.Heartbeat{Seq: 4, WorkerID: "raw-1", Incarnation: "inc-b", Epoch: 2}, false)
	ref, ok = p.recv().(*transport.Refused)
	require.True(t, ok)
	require.Equal(t, transport.RefuseStaleEpoch, ref.Code)

	p.send(&transport.Heartbeat{Seq: 5, WorkerID: "raw-1", Incarnation: "inc-a", Epoch: 2}, false)
	ack, ok := p.recv().(*transport.HeartbeatAck)
	require.True(t, ok)
	require.Equal(t, uint64(5), ack.Seq)

	// One stream speaks for one worker only.
	p.send(&transport.Heartbeat{Seq: 6, WorkerID: "raw-2", Incarnation: "x", Epoch: 1}, false)
	require.NoError(t, p.s.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, _, err := transport.ReadWorkerMessage(p.br, nil)
	require.ErrorIs(t, err, io.EOF)
}

func TestWorker_WorkerRefusesStaleControllerEpochOverTheTransport(t *testing.T) {
	net := transport.NewMemNetwork(3)
	ln, err := net.ListenStreams(1, "fake:1")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	w, err := StartWorker(WorkerConfig{
		DataDir: t.TempDir(), Controllers: []string{"fake:1"}, HeartbeatInterval: testcluster.Heartbeat,
		Dialer: net.StreamDialer(200), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Load: func() transport.WorkerLoad { return transport.WorkerLoad{} },
	})
	require.NoError(t, err)
	t.Cleanup(w.Halt)

	// A fake controller at epoch 7 registers the worker...
	accept := func() *rawPeer {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := ln.Accept(ctx)
		require.NoError(t, err)
		p := newRawPeer(t, s)
		require.NoError(t, transport.ReadWorkerPreamble(p.br))
		return p
	}
	p := accept()
	reg, ok := p.recv().(*transport.Register)
	require.True(t, ok)
	p.send(&transport.Registered{ControllerEpoch: 7, Seq: reg.Seq, Epoch: 1, SessionTimeoutMS: 1000}, false)
	require.Eventually(t, func() bool { return w.Status().Alive }, 5*time.Second, time.Millisecond)
	require.Equal(t, uint64(7), w.Status().ControllerEpoch)

	// ...then a message from an older controller epoch (a deposed leader)
	// arrives on the same session: it is refused and the session dropped.
	hb, ok := p.recv().(*transport.Heartbeat)
	require.True(t, ok)
	p.send(&transport.HeartbeatAck{ControllerEpoch: 5, Seq: hb.Seq, Epoch: 1, SessionTimeoutMS: 1000}, false)
	require.Eventually(t, func() bool {
		return testcluster.Metric(t, w.Registry(), "corral_worker_stale_epoch_refused_total") == 1
	}, 5*time.Second, time.Millisecond)
	require.Zero(t, testcluster.Metric(t, w.Registry(), "corral_worker_heartbeats_acked_total"), "the stale ack was counted")
	require.Equal(t, uint64(7), w.Status().ControllerEpoch)

	// The worker reconnects and resumes its epoch with the current leader.
	p2 := accept()
	hb2, ok := p2.recv().(*transport.Heartbeat)
	require.True(t, ok)
	require.Equal(t, uint64(1), hb2.Epoch)
	require.Equal(t, uint64(7), hb2.SeenControllerEpoch)
	p2.send(&transport.HeartbeatAck{ControllerEpoch: 7, Seq: hb2.Seq, Epoch: 1, SessionTimeoutMS: 1000}, false)
	require.Eventually(t, func() bool { return testcluster.Metric(t, w.Registry(), "corral_worker_heartbeats_acked_total") == 1 }, 5*time.Second, time.Millisecond)
	require.True(t, w.Status().Alive)

	// A registration answer from an old epoch is refused the same way.
	p2.send(&transport.Redirect{ControllerEpoch: 6, LeaderAddr: "fake:9"}, false)
	require.Eventually(t, func() bool {
		return testcluster.Metric(t, w.Registry(), "corral_worker_stale_epoch_refused_total") == 2
	}, 5*time.Second, time.Millisecond)
	p3 := accept() // it did not follow the stale redirect to fake:9
	_, ok = p3.recv().(*transport.Heartbeat)
	require.True(t, ok)
}

// A leader that is late, not gone, keeps its workers: the worker asks
// another controller who leads, hears "the same one", and neither drops its
// connection nor opens a new one to the leader (an overloaded leader would
// otherwise also pay for handshakes).
func TestWorker_LateLeaderIsProbedNotAbandoned(t *testing.T) {
	net := transport.NewMemNetwork(5)
	leaderLn, err := net.ListenStreams(1, "fake:1")
	require.NoError(t, err)
	t.Cleanup(func() { leaderLn.Close() })
	followerLn, err := net.ListenStreams(2, "fake:2")
	require.NoError(t, err)
	t.Cleanup(func() { followerLn.Close() })

	var leaderConns, probes atomic.Int64
	serve := func(ln transport.StreamListener, handle func(p *rawPeer)) {
		go func() {
			for {
				s, err := ln.Accept(context.Background())
				if err != nil {
					return
				}
				p := &rawPeer{t: t, s: s, br: bufio.NewReader(s)}
				if transport.ReadWorkerPreamble(p.br) != nil {
					s.Close()
					continue
				}
				go handle(p)
			}
		}()
	}
	var writeMu sync.Mutex
	reply := func(p *rawPeer, m transport.WorkerMessage) {
		b, _ := transport.AppendWorkerFrame(nil, m)
		writeMu.Lock()
		_, _ = p.s.Write(b)
		writeMu.Unlock()
	}
	// The leader answers every heartbeat three intervals late.
	serve(leaderLn, func(p *rawPeer) {
		leaderConns.Add(1)
		for {
			m, _, err := transport.ReadWorkerMessage(p.br, nil)
			if err != nil {
				return
			}
			switch m := m.(type) {
			case *transport.Register:
				reply(p, &transport.Registered{ControllerEpoch: 3, Seq: m.Seq, LeaderID: 1, Epoch: 1, SessionTimeoutMS: 2000})
			case *transport.Heartbeat:
				time.AfterFunc(3*testcluster.Heartbeat, func() {
					reply(p, &transport.HeartbeatAck{ControllerEpoch: 3, Seq: m.Seq, Epoch: 1, SessionTimeoutMS: 2000})
				})
			}
		}
	})
	// The follower redirects to the leader.
	serve(followerLn, func(p *rawPeer) {
		probes.Add(1)
		for {
			m, _, err := transport.ReadWorkerMessage(p.br, nil)
			if err != nil {
				return
			}
			if hb, ok := m.(*transport.Heartbeat); ok {
				reply(p, &transport.Redirect{ControllerEpoch: 3, Seq: hb.Seq, LeaderID: 1, LeaderAddr: "fake:1"})
			}
		}
	})

	var fenced atomic.Int64
	w, err := StartWorker(WorkerConfig{
		DataDir: t.TempDir(), Controllers: []string{"fake:1", "fake:2"}, HeartbeatInterval: testcluster.Heartbeat,
		Dialer: net.StreamDialer(300), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Load:     func() transport.WorkerLoad { return transport.WorkerLoad{} },
		OnFenced: func(uint64) { fenced.Add(1) },
	})
	require.NoError(t, err)
	t.Cleanup(w.Halt)
	require.Eventually(t, func() bool { return w.Status().Alive }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return probes.Load() > 0 }, 5*time.Second, time.Millisecond,
		"a late leader did not make the worker ask another controller")
	require.Never(t, func() bool { return leaderConns.Load() > 1 || fenced.Load() > 0 || !w.Status().Alive },
		20*testcluster.Heartbeat, 5*time.Millisecond, "the worker abandoned (or was fenced by) a leader that was only late")
	require.Positive(t, testcluster.Metric(t, w.Registry(), "corral_worker_heartbeats_acked_total"))
}

// A report that arrives on a stream before its first heartbeat (a worker
// that just moved to a new leader) is ignored, not taken as a protocol
// violation: the stream stays open and the next heartbeat is answered.
func TestWorker_ReportBeforeFirstHeartbeatKeepsTheStream(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	p := rawPeerToLeader(t, wc, 998)
	p.send(&transport.AllocReport{Seq: 1, WorkerID: "raw-2", Epoch: 1,
		Statuses: []transport.AllocStatus{{ID: "a1", State: "running"}}}, true)
	for seq := uint64(2); ; seq++ {
		p.send(&transport.Register{Seq: seq, WorkerID: "raw-2", Incarnation: "inc-b"}, false)
		m := p.recv()
		if _, ok := m.(*transport.Registered); ok {
			return
		}
		r, ok := m.(*transport.Refused)
		require.True(t, ok, "unexpected answer %#v", m)
		require.Equal(t, transport.RefuseNotReady, r.Code, r.Message)
	}
}
