package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/raftlog"
)

// run owns the raft node, with two helpers (storage_loops.go): the append
// loop writes the log, the apply loop applies what is committed. The raft
// loop itself never waits for the disk. done closes when all three ended.
func (c *Replica) run() {
	defer close(c.done)
	defer c.snapWG.Wait() // a snapshot being written uses the store, closed after done
	var loops sync.WaitGroup
	defer loops.Wait()
	loops.Go(func() { c.failOn(c.appendLoop()) })
	loops.Go(func() { c.failOn(c.applyLoop()) })
	ticker := time.NewTicker(c.cfg.TickInterval)
	defer ticker.Stop()
	late := newStallWatch(c.met.tickDelay, c.log, msgTickLate, c.cfg.TickInterval, c.cfg.ElectionTicks)
	for {
		select {
		case due := <-ticker.C:
			late.tickTaken(due, time.Now())
			c.node.Tick()
		case rd := <-c.node.Ready():
			c.handleReady(rd)
		case <-c.halt:
			return
		}
	}
}

// failOn stops the three loops on err, reported as Failed.
func (c *Replica) failOn(err error) {
	if err == nil {
		return
	}
	c.log.Error("raft loop stopped", "err", err)
	select {
	case c.failed <- err:
	default:
	}
	c.haltLoops()
}

// haltLoops ends the raft, append and apply loops (once).
func (c *Replica) haltLoops() {
	c.haltOnce.Do(func() {
		c.cancel()
		close(c.halt)
	})
}

// handleReady publishes what raft decided and routes its messages: the
// local writes to the append loop, committed entries to the apply loop,
// the rest to the network at once. With asynchronous storage writes raft
// puts every message that must wait for a write (a follower's
// acknowledgement, a vote) in that write's responses, so what remains may
// go out now, for a follower as for a leader. There is no Advance.
func (c *Replica) handleReady(rd raft.Ready) {
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
	out := rd.Messages[:0] // raft lets go of the slice with the Ready
	beats := false
	for _, m := range rd.Messages {
		switch m.GetTo() {
		case raft.LocalAppendThread:
			c.appendQ.push(m)
		case raft.LocalApplyThread:
			c.applyQ.push(applyItem{msg: m})
		default:
			beats = beats || m.GetType() == pb.MessageType_MsgHeartbeat
			out = append(out, m)
		}
	}
	c.send(out)
	if beats {
		c.beats.sent(time.Now())
	}
	for _, rs := range rd.ReadStates {
		c.reads.deliver(rs)
	}
}

func (c *Replica) updateSoftState(ss *raft.SoftState) {
	prev := c.leader.Swap(ss.Lead)
	c.raftState.Store(uint32(ss.RaftState))
	isLeader := ss.RaftState == raft.StateLeader
	wasLeader := c.isLeader.Swap(isLeader)
	if !isLeader {
		c.beats.stop()
	}
	if ss.Lead != 0 {
		c.met.hasLeader.Set(1)
	} else {
		c.met.hasLeader.Set(0)
	}
	if isLeader {
		c.met.isLeader.Set(1)
	} else {
		c.met.isLeader.Set(0)
	}
	if prev != ss.Lead {
		c.leaderKnown.fire()
		if ss.Lead != 0 {
			c.met.leaderChanges.Inc()
			c.leaders.observe(time.Now(), ss.Lead, c.term.Load())
		}
		c.log.Info("leader changed", "leader", ss.Lead, "previous", prev, "state", ss.RaftState.String())
		c.reads.leaderChanged()
		if prev != 0 {
			// A proposal forwarded to the old leader may be lost or may still
			// commit: tell its client now that the outcome is unknown rather
			// than hold it until the timeout.
			c.waits.failAll(errLeaderChanged)
		}
		if isLeader {
			go c.ensureClusterID()
		}
	}
	if wasLeader != isLeader {
		term := c.term.Load()
		if h := c.cfg.Hooks.LeadershipChanged; h != nil {
			h(isLeader, term)
		}
	}
}

// send hands messages to the transport, which never blocks. Outgoing
// snapshots carry the latest ConfState, because membership may have changed
// after the snapshot was taken.
func (c *Replica) send(msgs []*pb.Message) {
	if len(msgs) == 0 {
		return
	}
	for i, m := range msgs {
		if m.GetType() == pb.MessageType_MsgSnap && m.Snapshot != nil {
			m = proto.Clone(m).(*pb.Message)
			m.Snapshot.Metadata.ConfState = proto.Clone(c.currentConfState()).(*pb.ConfState)
			msgs[i] = m
		}
	}
	c.tr.Send(msgs)
}

func (c *Replica) installSnapshot(snap *pb.Snapshot) error {
	idx := snap.GetMetadata().GetIndex()
	st, err := metadata.Restore(snap.GetData())
	if err != nil {
		return fmt.Errorf("install snapshot at index %d: %w", idx, err)
	}
	if st.AppliedIndex() != idx {
		return fmt.Errorf("install snapshot at index %d: state machine says it is at %d", idx, st.AppliedIndex())
	}
	c.state.Store(st)
	if h := c.cfg.Hooks.SnapshotInstalled; h != nil {
		h(st)
	}
	c.snapIndex = idx
	c.snapBytes, c.logBytes = uint64(len(snap.GetData())), 0
	c.setConfState(snap.GetMetadata().GetConfState())
	c.syncPeers(snap.GetMetadata().GetConfState())
	c.applied.set(idx)
	c.met.appliedIndex.Set(float64(idx))
	c.met.snapshots.Inc()
	c.met.snapshotSize.Set(float64(len(snap.GetData())))
	c.learnClusterID(st.ClusterID())
	c.waits.failAll(ErrTimeout) // entries they waited for are inside the snapshot; outcome unknown to us
	c.log.Info("installed snapshot from leader", "index", idx, "bytes", len(snap.GetData()))
	return nil
}

func (c *Replica) applyEntries(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	if h := c.cfg.Hooks.BeforeApply; h != nil {
		h()
	}
	start := time.Now()
	st := c.state.Load()
	var last uint64
	jobs, revoked := false, false
	for _, e := range ents {
		idx := e.GetIndex()
		if idx <= st.AppliedIndex() {
			continue // already inside the state we restored
		}
		c.logBytes += uint64(len(e.GetData()))
		switch e.GetType() {
		case pb.EntryType_EntryNormal:
			id, res := st.ApplyEntry(idx, e.GetTerm(), e.GetData())
			if h := c.cfg.Hooks.Applied; h != nil {
				h(res.Events)
			}
			if h := c.cfg.Hooks.ZNodesApplied; h != nil && len(res.ZNodeEvents) > 0 {
				h(res.ZNodeEvents)
			}
			if errors.Is(res.Err, metadata.ErrTermChanged) {
				c.met.entriesSkipped.Inc()
				c.log.Info("skipped an entry proposed in an earlier term", "index", idx, "err", res.Err)
			}
			if errors.Is(res.Err, metadata.ErrUnknownOp) || errors.Is(res.Err, metadata.ErrUnsupportedVersion) {
				// A newer binary wrote this entry; applying around it would
				// diverge from the controllers that understand it.
				return fmt.Errorf("entry %d needs a newer corral: %w", idx, res.Err)
			}
			if id != 0 {
				if c.waits.trigger(id, res) {
					c.met.proposalsCommitted.Inc()
				}
			}
			if len(e.GetData()) > 0 && res.Err == nil {
				c.learnClusterID(st.ClusterID())
				jobs = jobs || metadata.AffectsJobs(e.GetData())
				revoked = revoked || metadata.AffectsRevocations(e.GetData())
			}
		case pb.EntryType_EntryConfChange, pb.EntryType_EntryConfChangeV2:
			if err := c.applyConfChange(st, e); err != nil {
				return err
			}
		}
		last = idx
	}
	if last != 0 {
		c.applied.set(last)
		c.met.appliedIndex.Set(float64(last))
	}
	if jobs {
		if h := c.cfg.Hooks.JobsChanged; h != nil {
			h()
		}
	}
	if revoked {
		c.revocationsChanged()
	}
	c.met.applyDuration.Observe(time.Since(start).Seconds())
	return nil
}

// applyConfChange applies a membership change to raft, the replicated
// member list and the transport, then wakes the proposer.
func (c *Replica) applyConfChange(st *metadata.State, e *pb.Entry) error {
	if e.GetType() == pb.EntryType_EntryConfChangeV2 {
		// Corral proposes only simple (v1) changes; a v2 entry is still
		// applied to raft so that every replica agrees on the configuration.
		v2 := &pb.ConfChangeV2{}
		if err := proto.Unmarshal(e.GetData(), v2); err != nil {
			return fmt.Errorf("decode conf change at index %d: %w", e.GetIndex(), err)
		}
		c.setConfState(c.node.ApplyConfChange(v2))
		st.Apply(e.GetIndex(), nil)
		return nil
	}
	cc := &pb.ConfChange{}
	if err := proto.Unmarshal(e.GetData(), cc); err != nil {
		return fmt.Errorf("decode conf change at index %d: %w", e.GetIndex(), err)
	}
	ctx := raftlog.ParseConfContext(cc.GetContext())
	c.setConfState(c.node.ApplyConfChange(cc))
	if err := c.applyMemberChange(st, e.GetIndex(), cc); err != nil {
		return fmt.Errorf("record conf change at index %d: %w", e.GetIndex(), err)
	}
	c.log.Info("membership changed", "change", cc.GetType().String(), "id", cc.GetNodeId(),
		"voters", c.currentConfState().GetVoters(), "learners", c.currentConfState().GetLearners())
	if ctx.RequestID != 0 {
		c.waits.trigger(ctx.RequestID, metadata.Result{})
	}
	return nil
}

// syncPeers points the transport at exactly the current members, using the
// replicated addresses (after a snapshot install or at start).
func (c *Replica) syncPeers(cs *pb.ConfState) {
	members := map[uint64]bool{}
	for _, set := range [][]uint64{cs.GetVoters(), cs.GetLearners(), cs.GetVotersOutgoing(), cs.GetLearnersNext()} {
		for _, id := range set {
			members[id] = true
		}
	}
	for id := range members {
		if addr, _ := c.MemberAddress(id); addr != "" && id != c.cfg.NodeID {
			c.tr.AddPeer(id, addr)
		}
	}
	for id := range c.cfg.Peers {
		if !members[id] && id != c.cfg.NodeID && len(members) > 0 {
			c.tr.RemovePeer(id)
		}
	}
}

// Process implements transport.Handler.
func (c *Replica) Process(ctx context.Context, m *pb.Message) error {
	if reason := c.validate(m); reason != "" {
		c.met.msgsDropped.WithLabelValues(reason).Inc()
		if c.drops.due(m.GetFrom(), reason, time.Now()) {
			c.log.Warn("dropping a raft message this peer may not send", "from", m.GetFrom(),
				"type", m.GetType().String(), "term", m.GetTerm(), "reason", reason)
		}
		return nil // dropped, like a message lost on the network
	}
	c.heard.touch(m.GetFrom())
	if m.GetType() == pb.MsgProp {
		return c.stepForwarded(m) // never blocks the stream (forward.go)
	}
	return c.node.Step(ctx, m)
}

// ReportUnreachable implements transport.Handler.
func (c *Replica) ReportUnreachable(id uint64) { c.node.ReportUnreachable(id) }

// ReportSnapshot implements transport.Handler.
func (c *Replica) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	c.node.ReportSnapshot(id, status)
}
