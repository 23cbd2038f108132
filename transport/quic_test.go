package transport

import (
	"context"
	"crypto/x509"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

func TestQUICThreeNodesExchange(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 3)
	nodes := map[uint64]*testNode{}
	for i, b := range bs {
		nodes[uint64(i+1)] = startNode(t, uint64(i+1), b, "", "c1")
	}
	for id, n := range nodes {
		for pid, p := range nodes {
			n.q.AddPeer(pid, p.q.Addr().String()) // includes self: must be ignored
		}
		n.q.AddPeer(id+10, "") // unknown junk peer never hurts the others
		n.q.RemovePeer(id + 10)
	}
	const perPair = 50
	for from, n := range nodes {
		var batch []*raftpb.Message
		for to := range nodes {
			if to == from {
				continue
			}
			for i := range perPair {
				batch = append(batch, msg(raftpb.MsgApp, from, to, uint64(i)))
			}
		}
		n.q.Send(batch)
	}
	for to, n := range nodes {
		for from := range nodes {
			if from == to {
				continue
			}
			require.Eventually(t, func() bool { return n.h.countFrom(from) == perPair },
				waitFor, 10*time.Millisecond, "node %d from %d", to, from)
		}
	}
	// Per-stream ordering is preserved: indexes from one sender arrive in order.
	for _, n := range nodes {
		last := map[uint64]int64{}
		for _, m := range n.h.received() {
			prev, ok := last[m.GetFrom()]
			require.True(t, !ok || int64(m.GetIndex()) == prev+1, "out of order from %d", m.GetFrom())
			last[m.GetFrom()] = int64(m.GetIndex())
		}
	}
	n1 := nodes[1]
	st := n1.q.PeerStatus(2)
	require.True(t, st.Connected)
	require.False(t, st.LastContact.IsZero())
	require.Eventually(t, func() bool { return n1.q.PeerStatus(2).RTT > 0 }, waitFor, 10*time.Millisecond)
	require.Equal(t, PeerStatus{}, n1.q.PeerStatus(42))
	require.Equal(t, float64(2*perPair), testutil.ToFloat64(n1.q.met.sent.WithLabelValues("MsgApp")))
	cnt, err := testutil.GatherAndCount(n1.reg, "corral_transport_messages_sent_total", "corral_transport_peer_rtt_seconds")
	require.NoError(t, err)
	require.GreaterOrEqual(t, cnt, 2)
}

func TestQUICUntrustedCertRefusedBothWays(t *testing.T) {
	t.Parallel()
	cluster := clusterBundles(t, 2)
	rogue := controllerBundles(t, 8)[0] // another CA (and cluster)
	a := startNode(t, 1, cluster[0], "", "")
	b := startNode(t, 2, cluster[1], "", "")
	a.q.AddPeer(2, b.q.Addr().String())
	b.q.AddPeer(1, a.q.Addr().String())
	untrusted := func(n *testNode) float64 {
		return testutil.ToFloat64(n.q.met.rejected.WithLabelValues(RejectUntrustedCert))
	}

	// 1) Server side: a rogue that trusts our CA (it is public) and knows
	// our cluster's name but holds a certificate from its own CA is refused
	// by the cluster node's listener.
	sneaky := &TLSBundle{CA: x509.NewCertPool(), Cert: rogue.Cert, Self: ControllerIdentity(cluster[0].Self.Cluster, 9)}
	sneaky.CA.AddCert(mustParse(t, cluster[0]))
	s := startNode(t, 9, sneaky, "", "")
	s.q.AddPeer(1, a.q.Addr().String())
	require.Eventually(t, func() bool {
		s.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 9, 1, 0)})
		return untrusted(a) > 0
	}, waitFor, 50*time.Millisecond, "listener must count the untrusted client cert")

	// 2) Client side: the cluster node refuses the rogue's server cert when it
	// dials, and the rogue refuses ours.
	r := startNode(t, 8, rogue, "", "")
	r.q.AddPeer(1, a.q.Addr().String())
	a.q.AddPeer(8, r.q.Addr().String())
	before := untrusted(a)
	require.Eventually(t, func() bool {
		a.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 8, 0)})
		r.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 8, 1, 0)})
		return untrusted(a) > before && untrusted(r) > 0
	}, waitFor, 50*time.Millisecond)
	require.Eventually(t, func() bool { return a.h.unreachableCount(8) > 0 }, waitFor, 10*time.Millisecond)

	// The cluster itself still works, and nothing crossed the trust boundary.
	a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1)})
	b.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 2, 1, 1)})
	require.Eventually(t, func() bool { return a.h.countFrom(2) > 0 && b.h.countFrom(1) > 0 }, waitFor, 10*time.Millisecond)
	require.Zero(t, a.h.countFrom(8))
	require.Zero(t, a.h.countFrom(9))
	require.Empty(t, r.h.received())
	require.Empty(t, s.h.received())
	require.False(t, a.q.PeerStatus(8).Connected)
	cnt, err := testutil.GatherAndCount(a.reg, "corral_transport_peer_rejected_total")
	require.NoError(t, err)
	require.Positive(t, cnt)
}

func mustParse(t *testing.T, b *TLSBundle) *x509.Certificate {
	t.Helper()
	// The bundle's leaf is signed by the CA; find the CA via the verified chain.
	chains, err := b.Cert.Leaf.Verify(x509.VerifyOptions{Roots: b.CA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	require.NoError(t, err)
	return chains[0][len(chains[0])-1]
}

// A message stream from another cluster is refused, over TCP and, when
// the peer has no TCP listener, over QUIC.
func TestQUICClusterIDMismatchRefused(t *testing.T) {
	t.Parallel()
	for _, tcp := range []bool{true, false} {
		bs := clusterBundles(t, 2)
		a := startNode(t, 1, bs[0], "", "cluster-a")
		b := startNode(t, 2, bs[1], "", "cluster-b")
		if !tcp {
			b.q.live.close()
		}
		a.q.AddPeer(2, b.q.Addr().String())
		require.Eventually(t, func() bool {
			a.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 0)})
			return testutil.ToFloat64(b.q.met.rejected.WithLabelValues(RejectClusterID)) > 0
		}, waitFor, 50*time.Millisecond, "tcp=%v", tcp)
		require.Eventually(t, func() bool { return a.h.unreachableCount(2) > 0 }, waitFor, 10*time.Millisecond)
		require.Empty(t, b.h.received())
		require.Equal(t, !tcp, testutil.ToFloat64(a.q.met.tcpFallback) > 0, "tcp=%v", tcp)
	}
}

// restartPeer exercises reconnection after the receiver goes away, either
// cleanly (CONNECTION_CLOSE) or by crashing (the stale connection is then
// torn down by a stateless reset from the restarted node, which derives the
// same reset key from its node key).
func restartPeer(t *testing.T, crash bool) {
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	addr := b.q.Addr().String()
	a.q.AddPeer(2, addr)
	idx := uint64(0)
	sendUntil := func(h *recHandler) {
		require.Eventually(t, func() bool {
			idx++
			a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, idx)})
			return h.countFrom(1) > 0
		}, waitFor, 20*time.Millisecond)
	}
	sendUntil(b.h)
	if crash {
		crashNode(b.q)
	} else {
		require.NoError(t, b.q.Close())
	}
	start := time.Now()
	b2 := startNode(t, 2, bs[1], addr, "")
	sendUntil(b2.h)
	t.Logf("reconnected after %v (crash=%v)", time.Since(start), crash)
	require.Eventually(t, func() bool { return a.q.PeerStatus(2).Connected }, waitFor, 10*time.Millisecond)
}

// crashNode stops a transport without telling its peers (no CONNECTION_CLOSE).
func crashNode(q *QUIC) {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	_ = q.tr.Close() // abrupt: connections die silently
	_ = q.udp.Close()
	if q.live != nil {
		q.live.close() // as the kernel closes a dead process's sockets
	}
	q.cancel()
	q.wg.Wait()
}

func TestQUICPeerRestartReconnects(t *testing.T) {
	t.Parallel()
	restartPeer(t, false)
}

func TestQUICPeerCrashReconnects(t *testing.T) {
	t.Parallel()
	restartPeer(t, true)
}

func TestQUICSnapshot(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	a.q.AddPeer(2, b.q.Addr().String())
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1), snapMsg(1, 2, data)})
	require.Eventually(t, func() bool { return a.h.snapReports(2, raft.SnapshotFinish) == 1 }, waitFor, 10*time.Millisecond)
	var got *raftpb.Message
	for _, m := range b.h.received() {
		if m.GetType() == raftpb.MsgSnap {
			got = m
		}
	}
	require.NotNil(t, got)
	require.Equal(t, data, got.GetSnapshot().GetData())
	require.Equal(t, []uint64{1, 2, 3}, got.GetSnapshot().GetMetadata().GetConfState().GetVoters())
	require.Equal(t, 1.0, testutil.ToFloat64(a.q.met.snapsSent))

	// A receiver whose Process fails makes the snapshot a Failure.
	b.h.mu.Lock()
	b.h.failProcess = true
	b.h.mu.Unlock()
	a.q.Send([]*raftpb.Message{snapMsg(1, 2, []byte("x"))})
	require.Eventually(t, func() bool { return a.h.snapReports(2, raft.SnapshotFailure) == 1 }, waitFor, 10*time.Millisecond)
}

func freeUDPAddr(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := c.LocalAddr().String()
	require.NoError(t, c.Close())
	return addr
}

func TestQUICSendToDeadPeerNeverBlocks(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 1)
	a := startNode(t, 1, bs[0], "", "")
	a.q.AddPeer(2, freeUDPAddr(t)) // nothing listens there
	start := time.Now()
	batch := make([]*raftpb.Message, 0, 100)
	for i := range 3 * queueSize {
		batch = append(batch, msg(raftpb.MsgApp, 1, 2, uint64(i)))
		if len(batch) == cap(batch) {
			a.q.Send(batch)
			batch = batch[:0]
		}
	}
	for range 2 * snapQueueSize {
		a.q.Send([]*raftpb.Message{snapMsg(1, 2, []byte("snap"))})
	}
	a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 77, 1), snapMsg(1, 77, nil)}) // unknown peer
	require.Less(t, time.Since(start), 2*time.Second, "Send must not block")
	require.Positive(t, testutil.ToFloat64(a.q.met.dropped))
	require.Eventually(t, func() bool {
		return a.h.unreachableCount(2) > 0 && a.h.snapReports(2, raft.SnapshotFailure) == 2*snapQueueSize &&
			a.h.snapReports(77, raft.SnapshotFailure) == 1
	}, waitFor, 10*time.Millisecond)
	require.False(t, a.q.PeerStatus(2).Connected)
}

func TestQUICAddPeerAddressChange(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	a.q.AddPeer(2, freeUDPAddr(t))
	a.q.AddPeer(2, b.q.Addr().String()) // idempotent id, new address
	require.Eventually(t, func() bool {
		a.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 0)})
		return b.h.countFrom(1) > 0
	}, waitFor, 20*time.Millisecond)
}

func TestQUICMisaddressedMessageDropped(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	a.q.AddPeer(2, b.q.Addr().String())
	a.q.AddPeer(3, b.q.Addr().String()) // wrong: node 3 is not at b's address
	a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 3, 1), msg(raftpb.MsgApp, 1, 2, 2)})
	// b's certificate names controller 2, so a refuses it as node 3 at the
	// handshake: the message for 3 never leaves a.
	require.Eventually(t, func() bool {
		return rejectedCount(t, a.reg, RejectWrongNode) >= 1 && b.h.countFrom(1) == 1
	}, waitFor, 10*time.Millisecond)
	require.Zero(t, rejectedCount(t, b.reg, RejectWrongNode))

	// A peer that gets a misaddressed message onto the wire anyway (a raft
	// bug, or a stale address behind a valid certificate) still has it
	// dropped by the receiver: one message for node 3 and one whose sender
	// is not the stream's node, between two good ones.
	conn := dialRaw(t, b.q.Addr().String(), bs[0].ClientConfig(ALPNRaft))
	writeRaftStream(t, conn, streamHeader{kind: streamKindMessages, from: 1},
		msg(raftpb.MsgApp, 1, 2, 3), msg(raftpb.MsgApp, 1, 3, 4), msg(raftpb.MsgApp, 5, 2, 5), msg(raftpb.MsgApp, 1, 2, 6))
	require.Eventually(t, func() bool {
		return rejectedCount(t, b.reg, RejectWrongNode) == 2 && b.h.countFrom(1) == 3
	}, waitFor, 10*time.Millisecond)
	require.Zero(t, b.h.countFrom(5))
	for _, m := range b.h.received() {
		require.Equal(t, uint64(2), m.GetTo())
	}
}

func TestQUICHandleALPN(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	got := make(chan string, 1)
	a.q.HandleALPN("corral-worker/1", func(c *quic.Conn) {
		got <- c.ConnectionState().TLS.NegotiatedProtocol
		<-c.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, err := quic.DialAddr(ctx, a.q.Addr().String(), bs[1].ClientConfig("corral-worker/1"), nil)
	require.NoError(t, err)
	defer c.CloseWithError(0, "")
	select {
	case p := <-got:
		require.Equal(t, "corral-worker/1", p)
	case <-ctx.Done():
		t.Fatal("ALPN handler not called")
	}
	// An unregistered protocol is refused during the handshake.
	_, err = quic.DialAddr(ctx, a.q.Addr().String(), bs[1].ClientConfig("nope/1"), nil)
	require.Error(t, err)
}

func TestQUICStartAndCloseErrors(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 1)
	_, err := NewQUIC(QUICConfig{NodeID: 0, ListenAddr: "127.0.0.1:0", TLS: bs[0]})
	require.Error(t, err)
	_, err = NewQUIC(QUICConfig{NodeID: 1, ListenAddr: "127.0.0.1:0"})
	require.Error(t, err)
	q, err := NewQUIC(QUICConfig{NodeID: 1, ListenAddr: "127.0.0.1:0", TLS: bs[0]})
	require.NoError(t, err)
	require.Error(t, q.Start(nil))
	require.NoError(t, q.Start(newRecHandler()))
	require.Error(t, q.Start(newRecHandler()))
	require.NoError(t, q.Close())
	require.NoError(t, q.Close())
	q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1)}) // after Close: silently ignored
}

// TestQUICCloseLeavesNoGoroutines is deliberately not parallel: parallel
// tests are paused while it runs, so the goroutine count is meaningful.
func TestQUICCloseLeavesNoGoroutines(t *testing.T) {
	bs := clusterBundles(t, 2)
	before := runtime.NumGoroutine()
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	a.q.AddPeer(2, b.q.Addr().String())
	b.q.AddPeer(1, a.q.Addr().String())
	b.q.AddPeer(3, freeUDPAddr(t)) // a peer stuck dialling
	require.Eventually(t, func() bool {
		a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1), snapMsg(1, 2, []byte("s"))})
		b.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 2, 1, 1), msg(raftpb.MsgApp, 2, 3, 1)})
		return a.h.countFrom(2) > 0 && b.h.countFrom(1) > 0
	}, waitFor, 20*time.Millisecond)
	require.NoError(t, a.q.Close())
	require.NoError(t, b.q.Close())
	// Polled by hand: require.Eventually runs its condition in a goroutine
	// of its own, which would skew the count.
	deadline := time.Now().Add(waitFor)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines leaked (before %d, now %d):\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		<-tick.C
	}
}

func TestQUICMetricsReRegister(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 1)
	reg := prometheus.NewRegistry()
	for range 2 { // a node re-created in one process reuses its collectors
		q, err := NewQUIC(QUICConfig{NodeID: 1, ListenAddr: "127.0.0.1:0", TLS: bs[0], Registerer: reg})
		require.NoError(t, err)
		q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 5, 1)}) // unknown peer => dropped
		require.NoError(t, q.Close())
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP corral_transport_messages_dropped_total Raft messages dropped: queue full, peer down, unknown peer or write error.
# TYPE corral_transport_messages_dropped_total counter
corral_transport_messages_dropped_total 2
`), "corral_transport_messages_dropped_total"))
}
