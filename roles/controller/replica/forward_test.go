package replica

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A forwarded write joins this member's own proposals, so the proposer
// goroutine hands raft the writes of every controller in one MsgProp; a
// forwarded membership change keeps its own queue (ProposeBatch proposes
// only normal entries). A full queue refuses, without blocking.
func TestForwardedWritesJoinTheLocalBatch(t *testing.T) {
	c := &Replica{
		props:    newFIFO[queuedProposal](),
		fwdProps: make(chan *pb.Message, 1),
		ctx:      context.Background(),
		met:      newControllerMetrics(prometheus.NewRegistry()),
	}
	c.submit(context.Background(), 7, []byte("local"))
	write := &pb.Message{Type: pb.MsgProp.Enum(), Entries: []*pb.Entry{{Data: []byte("a")}, {Data: []byte("b")}}}
	if err := c.stepForwarded(write); err != nil {
		t.Fatalf("forwarded write refused: %v", err)
	}
	conf := &pb.Message{Type: pb.MsgProp.Enum(), Entries: []*pb.Entry{{Type: pb.EntryType_EntryConfChange.Enum(), Data: []byte("cc")}}}
	if err := c.stepForwarded(conf); err != nil {
		t.Fatalf("forwarded conf change refused: %v", err)
	}

	got := c.props.take(nil)
	var data []string
	for _, p := range got {
		data = append(data, string(p.data))
	}
	if len(data) != 3 || data[0] != "local" || data[1] != "a" || data[2] != "b" {
		t.Fatalf("proposer queue holds %q, want [local a b]", data)
	}
	if got[1].id != 0 || got[2].id != 0 {
		t.Fatalf("forwarded entries got waiter ids %d, %d; their waiters are at the follower", got[1].id, got[2].id)
	}
	select {
	case m := <-c.fwdProps:
		if m != conf {
			t.Fatalf("conf change queue holds %v", m)
		}
	default:
		t.Fatal("the forwarded conf change is not in its own queue")
	}

	big := &pb.Message{Type: pb.MsgProp.Enum(), Entries: make([]*pb.Entry, maxQueuedForwarded+1)}
	for i := range big.Entries {
		big.Entries[i] = &pb.Entry{Data: []byte("x")}
	}
	if err := c.stepForwarded(big); err == nil {
		t.Fatal("a forwarded batch past the queue's bound was taken")
	}
	if n := len(c.props.take(nil)); n != 0 {
		t.Fatalf("a refused batch left %d entries queued", n)
	}
}

// A batch raft refuses counts the forwarded writes in it as dropped
// forwards (their proposers wait at the followers) and answers the local
// ones.
func TestRefusedBatchCountsForwardedWrites(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := &Replica{met: newControllerMetrics(reg)}
	c.waits.init()
	ch := c.waits.register(5)
	c.refuse([]queuedProposal{{id: 0}, {id: 5}, {id: 0}}, raft.ErrProposalDropped)
	if res := <-ch; !errors.Is(res.Err, ErrNoLeader) {
		t.Fatalf("local proposal answered %v, want ErrNoLeader", res.Err)
	}
	if got := testutil.ToFloat64(c.met.proposalsFailed.WithLabelValues("forward_dropped")); got != 2 {
		t.Fatalf("forward_dropped = %v, want 2", got)
	}
}
