package replica

import (
	"context"
	"errors"

	"go.etcd.io/raft/v3"

	"github.com/corral-dev/corral/metadata"
)

// Proposals in batches. Raft answers every MsgProp at the leader with a
// MsgApp to each follower, and every commit-index move with another: on a
// busy cluster, 4 messages out and 4 back per put (docs/PERFORMANCE.md,
// "Proposals in batches"). So the proposals of concurrent callers queue
// here, and one goroutine hands raft all that queued while it was handing
// it the previous lot, in one MsgProp (ProposeBatch, added to our copy of
// raft: third_party/raft/CORRAL.md). Raft appends the lot together and
// replicates it in one MsgApp per follower. Nothing waits to fill a batch:
// a lone proposal goes at once, and batches grow only with load. Each
// entry is still one command with its own id, term and waiter, so apply,
// snapshots and the wire format are unchanged.

// batchProposer is raft's node with the ProposeBatch our copy adds.
type batchProposer interface {
	ProposeBatch(ctx context.Context, data [][]byte) error
}

const (
	// maxBatchEntries and maxBatchBytes bound one MsgProp. Raft splits
	// MsgApps at MaxSizePerMsg anyway; the bounds keep a burst of large
	// values from becoming one huge append.
	maxBatchEntries = 512
	maxBatchBytes   = 4 << 20
)

// queuedProposal is a proposal waiting for the proposer goroutine.
type queuedProposal struct {
	id   uint64
	data []byte
	ctx  context.Context
}

// submit hands data (cmd id) to raft through the batching goroutine. A
// refusal reaches the caller through its waiter (proposeLoop).
func (c *Replica) submit(ctx context.Context, id uint64, data []byte) {
	c.props.push(queuedProposal{id: id, data: data, ctx: ctx})
}

// proposeLoop steps the queued proposals, as many as queued, one MsgProp
// at a time, until the replica stops.
func (c *Replica) proposeLoop(bp batchProposer) {
	base, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	go func() { // a batch waiting for raft gives up when the replica stops
		<-c.stopc
		cancelAll()
	}()
	var spare []queuedProposal
	data := make([][]byte, 0, maxBatchEntries)
	for {
		select {
		case <-c.stopc:
			for _, p := range c.props.take(nil) {
				c.waits.trigger(p.id, resultErr(ErrStopped))
			}
			return
		case <-c.props.ready:
		}
		all := c.props.take(spare)
		batch := all
		for len(batch) > 0 {
			n, size := 0, 0
			data = data[:0]
			for n < len(batch) && n < maxBatchEntries && (n == 0 || size+len(batch[n].data) <= maxBatchBytes) {
				if batch[n].ctx.Err() == nil { // its caller gave up: leave it out
					data = append(data, batch[n].data)
					size += len(batch[n].data)
				}
				n++
			}
			if len(data) > 0 {
				ctx, cancel := context.WithTimeout(base, c.cfg.RequestTimeout)
				err := bp.ProposeBatch(ctx, data)
				cancel()
				if err != nil {
					c.refuse(batch[:n], err)
				}
			}
			clear(batch[:n]) // let the data go
			batch = batch[n:]
		}
		spare = all[:0]
	}
}

func resultErr(err error) metadata.Result { return metadata.Result{Err: err} }

// refuse tells the callers of a batch raft did not take why.
func (c *Replica) refuse(batch []queuedProposal, err error) {
	reason, out := "dropped", ErrTimeout
	switch {
	case errors.Is(err, raft.ErrProposalDropped):
		out = ErrNoLeader // nothing appended: safe to retry elsewhere
	case errors.Is(err, raft.ErrStopped):
		out = ErrStopped
	}
	for _, p := range batch {
		if p.id == 0 { // a follower's write (forward.go): its proposer times out
			c.met.proposalsFailed.WithLabelValues("forward_dropped").Inc()
			continue
		}
		if c.waits.trigger(p.id, resultErr(out)) {
			c.met.proposalsFailed.WithLabelValues(reason).Inc()
		}
	}
}
