package replica

import (
	"context"
	"errors"

	pb "go.etcd.io/raft/v3/raftpb"
)

// forwardedProposalQueue bounds the proposals other controllers forwarded
// to this one that wait to be stepped.
const forwardedProposalQueue = 1024

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
func (c *Replica) stepForwarded(m *pb.Message) error {
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
