package replica

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/raftlog"
	"github.com/corral-dev/corral/roles/controller/fault"
)

// Learner promotion: a learner becomes a voter once its match index has been
// within PromoteMaxLag entries of the leader's last index, with the leader
// hearing from it, continuously for PromoteAfter.
const (
	PromoteMaxLag = 100
	PromoteAfter  = 3 * time.Second
)

// proposeConfChange proposes cc and waits until this controller applied it.
// Raft silently turns a conf change into an empty entry when another one is
// still pending, so a change that does not show up is reported, never
// assumed.
func (c *Replica) proposeConfChange(ctx context.Context, typ pb.ConfChangeType, id uint64, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*c.cfg.RequestTimeout)
	defer cancel()
	req := c.nextReq.Add(1)
	cctx := raftlog.ConfContext{RequestID: req, Address: addr}.Encode()
	ch := c.waits.register(req)
	defer c.waits.cancel(req)
	cc := &pb.ConfChange{Type: typ.Enum(), NodeId: new(id), Context: cctx}
	if err := c.node.ProposeConfChange(ctx, cc); err != nil {
		return fmt.Errorf("propose %s of controller %d: %w", typ, id, ErrNoLeader)
	}
	select {
	case res := <-ch:
		if res.Err != nil {
			return fmt.Errorf("%s of controller %d: %w", typ, id, res.Err)
		}
		return nil
	case <-ctx.Done():
		return fault.New(fault.Timeout, "timeout",
			"%s of controller %d was not committed in time (the quorum may be unavailable or another change is pending); check `corral controller list` before retrying", typ, id)
	}
}

// members returns voters and learners of the current configuration.
func (c *Replica) members() (voters, learners map[uint64]bool) {
	cs := c.currentConfState()
	voters, learners = map[uint64]bool{}, map[uint64]bool{}
	for _, id := range cs.GetVoters() {
		voters[id] = true
	}
	for _, id := range cs.GetLearners() {
		learners[id] = true
	}
	return voters, learners
}

// AddController adds id as a learner; the promoter makes it a voter once it
// caught up. Only the leader runs it.
func (c *Replica) AddController(ctx context.Context, id uint64, addr string) error {
	if id == 0 {
		return fault.New(fault.Invalid, "bad_request", "id must be a positive integer")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fault.New(fault.Invalid, "bad_request", "address %q must be HOST:PORT: %v", addr, err)
	}
	if !c.memberMu.TryLock() {
		return fault.New(fault.Conflict, "change_in_progress", "another membership change is in progress; retry when it finished")
	}
	defer c.memberMu.Unlock()
	if c.State().WasRemoved(id) {
		return fault.New(fault.Conflict, "id_reused", "controller id %d belonged to a removed controller and may never be reused; pick a new id", id)
	}
	voters, learners := c.members()
	if voters[id] || learners[id] {
		return fault.New(fault.Conflict, "already_member", "controller %d is already a member", id)
	}
	c.log.Info("adding controller as learner", "id", id, "address", addr)
	return c.proposeConfChange(ctx, pb.ConfChangeType_ConfChangeAddLearnerNode, id, addr)
}

// RemoveController removes id. Removing the leader hands leadership to the
// most caught-up voter first; a removal that would leave the remaining
// voters without a reachable majority is refused unless force.
func (c *Replica) RemoveController(ctx context.Context, id uint64, force bool) error {
	voters, learners := c.members()
	if !voters[id] && !learners[id] {
		return fault.New(fault.NotFound, "not_found", "controller %d is not a member", id)
	}
	if voters[id] {
		if err := c.checkRemovalKeepsQuorum(id, voters, force); err != nil {
			return err
		}
	}
	if id == c.cfg.NodeID {
		// Leadership moves first; the caller then retries on the new leader.
		if err := c.transferToBest(ctx, voters); err != nil {
			return err
		}
		return fault.ErrLeadershipMoved
	}
	if !c.memberMu.TryLock() {
		return fault.New(fault.Conflict, "change_in_progress", "another membership change is in progress; retry when it finished")
	}
	defer c.memberMu.Unlock()
	c.log.Info("removing controller", "id", id, "force", force)
	return c.proposeConfChange(ctx, pb.ConfChangeType_ConfChangeRemoveNode, id, "")
}

func (c *Replica) checkRemovalKeepsQuorum(id uint64, voters map[uint64]bool, force bool) error {
	if len(voters) == 1 {
		return fault.New(fault.Conflict, "last_voter", "controller %d is the last voter; a cluster cannot remove its only voter", id)
	}
	status := c.node.Status()
	remaining, reachable := 0, 0
	for v := range voters {
		if v == id {
			continue
		}
		remaining++
		if v == c.cfg.NodeID || c.Reachable(status, v) {
			reachable++
		}
	}
	need := remaining/2 + 1
	if reachable < need && !force {
		return fault.New(fault.Conflict, "quorum_at_risk",
			"removing controller %d would leave %d voters of which only %d are reachable, and a quorum needs %d; bring controllers back first or pass --force",
			id, remaining, reachable, need)
	}
	return nil
}

// transferToBest hands leadership to the reachable voter with the highest
// match index and waits for it to take over.
func (c *Replica) transferToBest(ctx context.Context, voters map[uint64]bool) error {
	status := c.node.Status()
	var best uint64
	var bestMatch uint64
	for v := range voters {
		pr := status.Progress[v]
		if v == c.cfg.NodeID || !c.Reachable(status, v) {
			continue
		}
		if best == 0 || pr.Match > bestMatch || (pr.Match == bestMatch && v < best) {
			best, bestMatch = v, pr.Match
		}
	}
	if best == 0 {
		return fault.New(fault.Conflict, "quorum_at_risk", "no other reachable voter can take over leadership")
	}
	return c.TransferLeader(ctx, best)
}

// HandOff transfers leadership to the reachable voter with the highest
// match index and waits for it to take over (leader only).
func (c *Replica) HandOff(ctx context.Context) error {
	voters, _ := c.members()
	return c.transferToBest(ctx, voters)
}

// TransferLeader asks raft to hand leadership to id and waits until it has.
func (c *Replica) TransferLeader(ctx context.Context, id uint64) error {
	voters, learners := c.members()
	switch {
	case learners[id]:
		return fault.New(fault.Conflict, "not_voter", "controller %d is a learner; only voters can lead", id)
	case !voters[id]:
		return fault.New(fault.NotFound, "not_found", "controller %d is not a member", id)
	case id == c.cfg.NodeID:
		return nil
	}
	wait := time.Duration(3*c.cfg.ElectionTicks) * c.cfg.TickInterval
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c.log.Info("transferring leadership", "to", id)
	c.node.TransferLeadership(ctx, c.cfg.NodeID, id)
	for c.leader.Load() != id {
		select {
		case <-ctx.Done():
			return fault.New(fault.Timeout, "timeout",
				"leadership did not move to controller %d within %v; it may be behind or unreachable", id, wait)
		case <-time.After(c.cfg.TickInterval):
		}
	}
	return nil
}

// promoteLoop runs for the life of the controller and, while it leads,
// promotes learners that have stayed caught up for PromoteAfter.
func (c *Replica) promoteLoop() {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	since := map[uint64]time.Time{}
	for {
		select {
		case <-c.stopc:
			return
		case <-tick.C:
		}
		c.updateQuorumMetrics()
		if !c.isLeader.Load() {
			clear(since)
			continue
		}
		c.promoteCaughtUp(since)
	}
}

func (c *Replica) promoteCaughtUp(since map[uint64]time.Time) {
	status := c.node.Status()
	last, err := c.store.LastIndex()
	if err != nil {
		return
	}
	_, learners := c.members()
	for id := range since {
		if !learners[id] {
			delete(since, id)
		}
	}
	for id := range learners {
		pr, ok := status.Progress[id]
		// Not raft's RecentActive: CheckQuorum clears it every election
		// timeout, and a sampler in phase with that would never promote.
		heard := c.Reachable(status, id)
		caughtUp := ok && heard && pr.State == tracker.StateReplicate && pr.Match+PromoteMaxLag >= last
		if !caughtUp {
			if _, was := since[id]; was {
				c.log.Debug("learner fell behind", "id", id, "heard", heard,
					"state", pr.State.String(), "match", pr.Match, "leader_last", last)
			}
			delete(since, id)
			continue
		}
		if _, seen := since[id]; !seen {
			since[id] = time.Now()
			continue
		}
		if time.Since(since[id]) < c.promoteAfter() || !c.memberMu.TryLock() {
			continue
		}
		c.log.Info("promoting caught-up learner to voter", "id", id, "match", pr.Match, "leader_last", last)
		err := c.proposeConfChange(context.Background(), pb.ConfChangeType_ConfChangeAddNode, id, "")
		c.memberMu.Unlock()
		if err != nil {
			c.log.Warn("promotion failed", "id", id, "err", err)
		}
		delete(since, id)
	}
}

func (c *Replica) promoteAfter() time.Duration {
	if c.cfg.PromoteAfter > 0 {
		return c.cfg.PromoteAfter
	}
	return PromoteAfter
}

// quorumHealth is this controller's view of the voters it can reach.
type QuorumHealth struct {
	Voters           int  `json:"voters"`
	Learners         int  `json:"learners"`
	Reachable        int  `json:"reachable"`
	Needed           int  `json:"needed"`
	Healthy          bool `json:"healthy"`
	FailureTolerance int  `json:"failure_tolerance"`
}

func (c *Replica) Quorum() QuorumHealth {
	voters, learners := c.members()
	status := c.node.Status()
	h := QuorumHealth{Voters: len(voters), Learners: len(learners), Needed: len(voters)/2 + 1}
	for v := range voters {
		switch {
		case v == c.cfg.NodeID:
			h.Reachable++
		case c.Reachable(status, v):
			h.Reachable++
		}
	}
	h.Healthy = status.Lead != 0 && h.Reachable >= h.Needed
	if h.Healthy {
		h.FailureTolerance = h.Reachable - h.Needed
	}
	return h
}

func (c *Replica) updateQuorumMetrics() {
	h := c.Quorum()
	c.met.voters.Set(float64(h.Voters))
	c.met.learners.Set(float64(h.Learners))
	c.met.failureTolerance.Set(float64(h.FailureTolerance))
}

// memberAddress is where id is reached: the replicated member record, or
// the static --controllers list for a cluster bootstrapped from it.
func (c *Replica) MemberAddress(id uint64) (cluster, httpAddr string) {
	if m, ok := c.State().Member(id); ok {
		cluster, httpAddr = m.Address, m.HTTPAddress
	}
	if cluster == "" {
		cluster = c.cfg.Peers[id]
	}
	return cluster, httpAddr
}

// controllerIDs returns voters then learners, each sorted.
func sortedKeys(m map[uint64]bool) []uint64 {
	out := make([]uint64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// applyMemberChange keeps the replicated member list in step with a conf
// change; the caller already applied it to raft.
func (c *Replica) applyMemberChange(st *metadata.State, idx uint64, cc *pb.ConfChange) error {
	op, m := raftlog.MemberChange(cc)
	if err := st.ApplyMemberChange(idx, op, m); err != nil {
		return err
	}
	id := m.ID
	switch op {
	case metadata.MemberAdd:
		if addr, _ := c.MemberAddress(id); addr != "" && id != c.cfg.NodeID {
			c.tr.AddPeer(id, addr)
		}
	case metadata.MemberRemove:
		if id == c.cfg.NodeID {
			c.log.Warn("this controller was removed from the quorum; it no longer votes or serves linearizable requests")
		} else {
			c.tr.RemovePeer(id)
		}
	}
	return nil
}

// heardTracker remembers when each peer last sent us a raft message. Raft's
// RecentActive lags by up to an election timeout, too slow for deciding
// whether a removal is safe.
type heardTracker struct {
	mu   sync.Mutex
	last map[uint64]time.Time
}

func (h *heardTracker) init() { h.last = map[uint64]time.Time{} }

func (h *heardTracker) touch(id uint64) {
	now := time.Now()
	h.mu.Lock()
	h.last[id] = now
	h.mu.Unlock()
}

func (h *heardTracker) get(id uint64) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[id]
}

// reachable reports whether peer id answered recently: within half an
// election timeout (followers answer every heartbeat, one tick). A follower
// hears only the leader, so for other followers it falls back to whether
// its own QUIC connection is up.
func (c *Replica) Reachable(status raft.Status, id uint64) bool {
	fresh := time.Duration(c.cfg.ElectionTicks/2) * c.cfg.TickInterval
	heard := time.Since(c.heard.get(id)) < fresh
	if status.RaftState == raft.StateLeader {
		_, member := status.Progress[id]
		return heard && member
	}
	if id == status.Lead {
		return heard
	}
	return c.tr.PeerStatus(id).Connected
}
