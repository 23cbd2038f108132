package replica

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// With asynchronous storage writes (raft.Config.AsyncStorageWrites) the
// raft loop never waits for the disk. It only sends: messages to peers go
// out at once, the log writes go to the append goroutine and the committed
// entries to the apply goroutine, each in raft's order. A write's
// consequences (the follower's acknowledgement, the leader's own vote
// for its entries, a vote granted) are the Responses raft attaches to it,
// and leave only after the write is synced; so nothing is acknowledged
// before it is durable, exactly as in the synchronous loop.
//
// What it buys: in the synchronous loop the leader learns that a follower
// stored batch N only once its own sync of batch N+1 is done, and applies
// it after that; a put waited two to three syncs in a row. Here the
// acknowledgement is stepped while the next sync runs, and the apply
// goroutine applies beside the disk.
//
// Ownership: the loop owns the Ready; the append goroutine owns savedTerm
// and savedVote; the apply goroutine owns the state machine's writes and
// the snapshot bookkeeping (snapIndex, snapBusy, snapBytes, logBytes,
// snapJitter), which the synchronous loop owns itself. A snapshot from the
// leader is saved by the append goroutine and installed by the apply
// goroutine, in order with the entries before it, before raft hears that
// it is stored: raft emits no entry past it until then.

// storageQueue bounds the writes and applies raft may have outstanding;
// a full queue makes the loop wait, as the synchronous loop always does.
const storageQueue = 1024

// applyJob is one unit of work for the apply goroutine: committed entries
// (with the responses to step after them), or a leader's snapshot to
// install (installed reports the outcome).
type applyJob struct {
	msg       *pb.Message
	snap      *pb.Snapshot
	installed chan error
}

// runAsync is run's loop with asynchronous storage writes.
func (c *Replica) runAsync() {
	c.appendc = make(chan *pb.Message, storageQueue)
	c.applyc = make(chan applyJob, storageQueue)
	c.halt = make(chan struct{})
	c.workers.Go(c.appendLoop)
	c.workers.Go(c.applyLoop)
	defer c.workers.Wait()
	ticker := time.NewTicker(c.cfg.TickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			c.node.Tick()
		case rd := <-c.node.Ready():
			if !c.dispatchReady(rd) {
				return
			}
		case <-c.halt:
			return
		case <-c.stopc:
			return
		}
	}
}

// dispatchReady does the loop's part of a Ready: bookkeeping, messages to
// peers, and queueing the local writes and applies. False means stop.
func (c *Replica) dispatchReady(rd raft.Ready) bool {
	c.noteReady(rd)
	peers := rd.Messages[:0:0]
	for _, m := range rd.Messages {
		switch m.GetTo() {
		case raft.LocalAppendThread:
			select {
			case c.appendc <- m:
			case <-c.halt:
				return false
			case <-c.stopc:
				return false
			}
		case raft.LocalApplyThread:
			select {
			case c.applyc <- applyJob{msg: m}:
			case <-c.halt:
				return false
			case <-c.stopc:
				return false
			}
		default:
			peers = append(peers, m)
		}
	}
	c.send(peers)
	for _, rs := range rd.ReadStates {
		c.reads.deliver(rs)
	}
	return true
}

// noteReady records what a Ready says about term, commit, leadership and
// the last index handed out; both loops start with it.
func (c *Replica) noteReady(rd raft.Ready) {
	// Term first: leadership hooks read it.
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		c.term.Store(rd.HardState.GetTerm())
		c.commit.Store(rd.HardState.GetCommit())
		c.met.term.Set(float64(rd.HardState.GetTerm()))
		c.met.commitIndex.Set(float64(rd.HardState.GetCommit()))
	}
	if rd.SoftState != nil {
		c.updateSoftState(rd.SoftState)
	}
	if n := len(rd.Entries); n > 0 {
		c.readyLast.Store(rd.Entries[n-1].GetIndex()) // before anyone can acknowledge them (validate.go)
	}
}

// fail stops the loop and both storage goroutines after a storage error.
func (c *Replica) fail(err error) {
	c.haltOnce.Do(func() {
		c.stopOn(err)
		close(c.halt)
	})
}

// appendLoop writes raft's log appends in order and then delivers what
// each one made true. Appends that queued up while it synced are written
// together, in one batch and one sync: the loop hands out a Ready per
// proposal or so, and a sync each would cost the disk (and the CPU) far
// more than the synchronous loop, which batches by waiting.
func (c *Replica) appendLoop() {
	var batch []*pb.Message
	for {
		select {
		case m := <-c.appendc:
			batch = append(batch[:0], m)
			for len(batch) < maxAppendBatch && m.GetSnapshot() == nil {
				select {
				case m = <-c.appendc:
					batch = append(batch, m)
					continue
				default:
				}
				break
			}
			if err := c.processAppends(batch); err != nil {
				c.fail(err)
				return
			}
			clear(batch)
		case <-c.halt:
			return
		case <-c.stopc:
			return
		}
	}
}

// maxAppendBatch bounds the raft appends written in one batch.
const maxAppendBatch = 256

// processAppends writes msgs, raft's appends in order, and delivers their
// responses. A leader's snapshot goes alone or last (appendLoop stops
// gathering at one) and is installed before any response leaves.
func (c *Replica) processAppends(msgs []*pb.Message) error {
	if n := len(msgs); n > 1 && msgs[n-1].GetSnapshot() != nil {
		if err := c.processAppends(msgs[:n-1]); err != nil {
			return err
		}
		return c.processAppends(msgs[n-1:])
	}
	var (
		ents []*pb.Entry
		hs   *pb.HardState
		snap *pb.Snapshot
		sync bool
	)
	term, vote := c.savedTerm, c.savedVote
	for i, m := range msgs {
		if next := m.GetEntries(); len(next) > 0 {
			ents = spliceEntries(ents, next)
			if ents == nil { // not contiguous: write what came before on its own
				if err := c.processAppends(msgs[:i]); err != nil {
					return err
				}
				return c.processAppends(msgs[i:])
			}
			sync = true
		}
		if m.Term != nil {
			hs = &pb.HardState{Term: new(m.GetTerm()), Vote: new(m.GetVote()), Commit: new(m.GetCommit())}
			// raft.MustSync: a term or vote must survive a crash; a
			// commit index alone is learned again from the leader.
			if hs.GetTerm() != term || hs.GetVote() != vote {
				sync = true
			}
			term, vote = hs.GetTerm(), hs.GetVote()
		}
		if s := m.GetSnapshot(); s != nil && !raft.IsEmptySnap(s) {
			snap, sync = s, true
		}
	}
	if h := c.cfg.Hooks.BeforePersist; h != nil && len(ents) > 0 {
		h(ents[len(ents)-1].GetIndex())
	}
	if err := c.store.Save(hs, ents, snap, sync); err != nil {
		return fmt.Errorf("persist raft log append: %w", err)
	}
	c.savedTerm, c.savedVote = term, vote
	if snap != nil {
		if err := c.installFromAppend(snap); err != nil {
			return err
		}
	}
	for _, m := range msgs {
		c.deliver(m.GetResponses())
	}
	return nil
}

// spliceEntries appends next to ents as the store would: next's first
// index replaces everything from that index on. Nil when next would leave
// a gap.
func spliceEntries(ents, next []*pb.Entry) []*pb.Entry {
	if len(ents) == 0 {
		return append([]*pb.Entry(nil), next...)
	}
	first, f := ents[0].GetIndex(), next[0].GetIndex()
	switch {
	case f > ents[len(ents)-1].GetIndex()+1:
		return nil
	case f <= first:
		return append(ents[:0], next...)
	default:
		return append(ents[:f-first], next...)
	}
}

// installFromAppend has the apply goroutine install a leader's snapshot,
// after the entries queued before it, and waits for it.
func (c *Replica) installFromAppend(snap *pb.Snapshot) error {
	done := make(chan error, 1)
	select {
	case c.applyc <- applyJob{snap: snap, installed: done}:
	case <-c.halt:
		return nil
	case <-c.stopc:
		return nil
	}
	select {
	case err := <-done:
		return err
	case <-c.halt:
		return nil
	case <-c.stopc:
		return nil
	}
}

// deliver steps the responses addressed to this node and sends the rest.
func (c *Replica) deliver(resps []*pb.Message) {
	var out []*pb.Message
	for _, r := range resps {
		if r.GetTo() == c.cfg.NodeID {
			// Only ErrStopped: the node is shutting down.
			_ = c.node.Step(context.Background(), r)
			continue
		}
		out = append(out, r)
	}
	c.send(out)
}

// applyLoop applies committed entries and installs snapshots in raft's
// order, and takes this member's own snapshots.
func (c *Replica) applyLoop() {
	for {
		select {
		case j := <-c.applyc:
			if err := c.processApply(j); err != nil {
				c.fail(err)
				return
			}
		case r := <-c.snapDone:
			if err := c.snapshotDone(r); err != nil {
				c.fail(err)
				return
			}
		case <-c.halt:
			return
		case <-c.stopc:
			return
		}
	}
}

func (c *Replica) processApply(j applyJob) error {
	if j.snap != nil {
		err := c.installSnapshot(j.snap)
		j.installed <- err
		return err
	}
	if err := c.applyEntries(j.msg.GetEntries()); err != nil {
		return err
	}
	c.maybeSnapshot()
	c.deliver(j.msg.GetResponses())
	return nil
}
