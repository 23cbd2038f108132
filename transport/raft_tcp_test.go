package transport

import (
	"context"
	"crypto/tls"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// startPair starts controllers 1 and 2 of one cluster, 1 sending to 2.
func startPair(t *testing.T) (a, b *testNode) {
	t.Helper()
	bs := clusterBundles(t, 2)
	a = startNode(t, 1, bs[0], "", "")
	b = startNode(t, 2, bs[1], "", "")
	require.NotNil(t, b.q.live, "the TCP listener on the cluster port started")
	a.q.AddPeer(2, b.q.Addr().String())
	return a, b
}

// sendUntilDelivered sends from a to b until b has count messages from a.
func sendUntilDelivered(t *testing.T, a, b *testNode, count int) {
	t.Helper()
	idx := uint64(0)
	require.Eventually(t, func() bool {
		idx++
		a.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, idx)})
		return b.h.countFrom(1) >= count
	}, waitFor, 10*time.Millisecond)
}

func TestRaftMessagesGoOverTCP(t *testing.T) {
	t.Parallel()
	a, b := startPair(t)
	sendUntilDelivered(t, a, b, 20)
	require.True(t, a.q.PeerStatus(2).MessagesOverTCP, "messages went over QUIC")
	require.Zero(t, testutil.ToFloat64(a.q.met.tcpFallback))
}

// A peer whose TCP listener is gone (a firewall that passes only UDP, a
// port taken, a peer of a version without it) still gets its messages,
// over QUIC.
func TestRaftMessagesFallBackToQUICWithoutTCP(t *testing.T) {
	t.Parallel()
	startPairOnQUIC(t, tcpRetryAfter)
}

// startPairOnQUIC starts controllers 1 and 2, 2 without its TCP
// listener, and sends from 1 until 2 has its messages over QUIC; 1 tries
// TCP again after retry.
func startPairOnQUIC(t *testing.T, retry time.Duration) (a, b *testNode) {
	t.Helper()
	bs := clusterBundles(t, 2)
	a = startNode(t, 1, bs[0], "", "")
	b = startNode(t, 2, bs[1], "", "")
	b.q.live.close()
	a.q.tcpRetryAfter = retry
	a.q.AddPeer(2, b.q.Addr().String())
	sendUntilDelivered(t, a, b, 20)
	require.False(t, a.q.PeerStatus(2).MessagesOverTCP)
	require.Positive(t, testutil.ToFloat64(a.q.met.tcpFallback))
	return a, b
}

// A stream that fell back to QUIC moves to TCP once TCP answers again,
// without waiting for the QUIC connection to end: at a restart of a
// loaded cluster every TCP dial can time out while the peers restore
// their state, and the messages then stayed on QUIC for good.
func TestRaftMessagesMoveToTCPWhenItComesBack(t *testing.T) {
	t.Parallel()
	a, b := startPairOnQUIC(t, 100*time.Millisecond)
	require.Zero(t, testutil.ToFloat64(a.q.met.tcpUpgrades))

	// TCP on the cluster port again, as after the peer's restore.
	l, err := newLivenessServer(b.q.Addr().String(), b.q.cfg.TLS.serverConfigCounting(b.q.onReject, ALPNLiveness, ALPNRaftTCP))
	require.NoError(t, err)
	l.onRaft = b.q.serveRaftTCP
	var wg sync.WaitGroup
	wg.Go(func() { l.serve(&wg) })
	t.Cleanup(func() { l.close(); wg.Wait() })

	require.Eventually(t, func() bool { return a.q.PeerStatus(2).MessagesOverTCP }, waitFor, 10*time.Millisecond)
	require.Equal(t, 1.0, testutil.ToFloat64(a.q.met.tcpUpgrades))
	before := b.h.countFrom(1)
	sendUntilDelivered(t, a, b, before+20)
	require.True(t, a.q.PeerStatus(2).MessagesOverTCP, "the messages went back to QUIC")
	require.Equal(t, 1.0, testutil.ToFloat64(a.q.met.tcpUpgrades))
}

// A TCP message stream is held to the same rules as one on QUIC: its
// header must name the node its certificate names, and only a controller
// certificate gets through the handshake.
func TestRaftTCPStreamChecksItsSender(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 2)
	b := startNode(t, 2, bs[1], "", "")
	dial := func(bundle *TLSBundle) (*tls.Conn, error) {
		conf := bundle.clientConfig(func(error) {}, 2, ALPNRaftTCP)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := (&tls.Dialer{Config: conf}).DialContext(ctx, "tcp", b.q.Addr().String())
		if err != nil {
			return nil, err
		}
		tc := c.(*tls.Conn)
		// TLS 1.3: a refused client certificate shows at the first read.
		_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
		return tc, nil
	}

	// Controller 1's certificate, a header claiming controller 3.
	tc, err := dial(bs[0])
	require.NoError(t, err)
	hdr, err := streamHeader{kind: streamKindMessages, from: 3, clusterID: ""}.marshal()
	require.NoError(t, err)
	_, err = tc.Write(hdr)
	require.NoError(t, err)
	got, err := io.ReadAll(tc)
	require.NoError(t, err, "the stream was closed, not left open")
	require.Equal(t, []byte{byte(errCodeBadHeader & 0xff)}, got, "refused with its reason")
	require.Eventually(t, func() bool { return rejectedCount(t, b.reg, RejectWrongNode) > 0 }, waitFor, 10*time.Millisecond)
	tc.Close()

	// A worker's certificate of the same cluster.
	wb := issueBundle(t, caDir, RoleWorker, "w1")
	wtc, err := dial(wb)
	if err == nil {
		_, err = wtc.Read(make([]byte, 1))
		wtc.Close()
	}
	require.Error(t, err, "a worker certificate got a raft stream")
	require.Eventually(t, func() bool { return rejectedCount(t, b.reg, RejectWrongRole) > 0 }, waitFor, 10*time.Millisecond)
	require.Zero(t, b.h.countFrom(1)+b.h.countFrom(3), "nothing delivered")
}
