package transport

import (
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// Raft messages flow one way on each connection (each controller dials
// its own), so the receiver has nothing to carry its acknowledgements on:
// with QUIC's default it sent a packet that only acknowledged every second
// message. A controller now acknowledges every tenth (ackEvery), or after
// 25 ms. The test sends messages one at a time, each in a packet of its
// own, and counts the packets that came back on the sender's connection;
// the default would return one per two messages.
func TestQUICRaftReceiverAcknowledgesInBatches(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 2)
	n1 := startNode(t, 1, bs[0], "", "c1")
	n2 := startNode(t, 2, bs[1], "", "c1")
	n1.q.AddPeer(2, n2.q.Addr().String())

	sendOne := func(i int) {
		n1.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, uint64(i))})
		// A fine tick: a slow poll would let QUIC's 25 ms acknowledgement
		// timer fire between messages and blur what is counted.
		require.Eventually(t, func() bool { return n2.h.countFrom(1) >= i },
			waitFor, 50*time.Microsecond, "message %d not delivered", i)
	}
	sendOne(1) // connects
	var conn *quic.Conn
	n1.q.mu.Lock()
	for c := range n1.q.dialed {
		conn = c
	}
	n1.q.mu.Unlock()
	require.NotNil(t, conn)

	const msgs = 40
	before := conn.ConnectionStats().PacketsReceived
	for i := 2; i <= msgs+1; i++ {
		sendOne(i)
	}
	back := conn.ConnectionStats().PacketsReceived - before
	t.Logf("packets back from the receiver while %d raft messages went one way: %d", msgs, back)
	// One per ten messages, plus one per 25 ms if the machine is slow, plus
	// stream flow-control updates; the default (every second packet) is
	// 20 and more.
	require.LessOrEqual(t, back, uint64(12))
}
