package replica

import (
	"context"
	"errors"

	pb "go.etcd.io/raft/v3/raftpb"
)

// forwardedProposalQueue bounds the forwarded membership changes that
// wait to be stepped.
const forwardedProposalQueue = 1024

// maxQueuedForwarded bounds the proposals waiting for the proposer
// goroutine when a forwarded one joins them.
const maxQueuedForwarded = 64 * maxBatchEntries

// plainEntries reports whether every entry is a normal one (what
// ProposeBatch proposes), and there is at least one.
func plainEntries(ents []*pb.Entry) bool {
	for _, e := range ents {
		if e.GetType() != pb.EntryType_EntryNormal {
			return false
		}
	}
	return len(ents) > 0
}

// errForwardQueueFull refuses a forwarded proposal when the queue is full.
var errForwardQueueFull = errors.New("forwarded proposal queue full")

// stepForwarded queues a proposal another controller forwarded (raft
// forwards a follower's proposals to the leader). Stepping it inline would
// be wrong: raft's Step for a proposal blocks while this node knows no
// leader, and every message behind it on the same stream — including the
// new leader's heartbeats, the only thing that would end the leaderless
// period — would wait too. That deadlock was seen when a paused leader
// resumed with its successor's proposals in its inbox. A full queue drops
// the proposal, as raft drops proposals without a leader; the proposer's
// client sees a timeout and retries.
//
// A forwarded proposal of plain entries (every write; not a membership
// change) joins this member's own proposals instead (propose_batch.go):
// the proposer goroutine then hands raft everything queued, from every
// follower and from here, in one MsgProp. With ZooKeeper clients spread
// over three controllers, each forwarding its own batches, the leader
// otherwise appended and replicated each follower's batch on its own: a
// MsgApp to every follower, an acknowledgement and an append at each, per
// batch (docs/PERFORMANCE.md, "One batch from every controller").
func (c *Replica) stepForwarded(m *pb.Message) error {
	if plainEntries(m.GetEntries()) {
		qs := make([]queuedProposal, len(m.GetEntries()))
		for i, e := range m.GetEntries() {
			qs[i] = queuedProposal{data: e.GetData(), ctx: c.ctx} // id 0: its waiter is at the follower
		}
		if !c.props.pushAll(qs, maxQueuedForwarded) {
			c.met.proposalsFailed.WithLabelValues("forward_dropped").Inc()
			return errForwardQueueFull
		}
		return nil
	}
	select {
	case c.fwdProps <- m:
		return nil
	default:
		c.met.proposalsFailed.WithLabelValues("forward_dropped").Inc()
		return errForwardQueueFull
	}
}

// forwardLoop steps forwarded proposals in their order, each for at most
// the request timeout: a proposal nobody took by then has been given up by
// its client already.
func (c *Replica) forwardLoop() {
	base, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	go func() {
		<-c.stopc
		cancelAll()
	}()
	for {
		select {
		case <-base.Done():
			return
		case m := <-c.fwdProps:
			ctx, cancel := context.WithTimeout(base, c.cfg.RequestTimeout)
			if err := c.node.Step(ctx, m); err != nil {
				c.met.proposalsFailed.WithLabelValues("forward_dropped").Inc()
			}
			cancel()
		}
	}
}
