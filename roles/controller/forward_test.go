package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A proposal forwarded to a controller that knows no leader must not hold
// up the messages behind it on the same stream (the new leader's
// heartbeats among them): Process hands it to its own queue and returns.
func TestForwardedProposalNeverBlocksTheStream(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	others := mc.others(lead)
	mc.stopNode(lead)
	mc.stopNode(others[0])
	alone := mc.node(others[1])
	require.Eventually(t, func() bool { return alone.LeaderID() == 0 }, 10*time.Second, 10*time.Millisecond)

	var returned atomic.Bool
	go func() {
		m := &pb.Message{Type: pb.MsgProp.Enum(), From: new(others[0]), To: new(others[1]),
			Entries: []*pb.Entry{{Data: []byte("x")}}}
		_ = alone.r.Process(context.Background(), m)
		returned.Store(true)
	}()
	require.Eventually(t, returned.Load, 2*time.Second, 5*time.Millisecond,
		"Process blocked on a forwarded proposal while the node knows no leader")
}
