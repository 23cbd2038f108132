package controller

import (
	"sort"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/api/view"
	"go.etcd.io/raft/v3"
)

// What the HTTP API shows of this controller: the views it renders and
// the coordination waits it needs, built from the controller's parts
// (apibackend.go hands them to package api).

// clusterView describes the quorum as this controller sees it. Only the
// leader knows followers' match indexes; a follower reports its own.
func (c *Controller) clusterView() view.ClusterInfo {
	status := c.r.Status()
	applied, _ := c.r.Applied()
	out := view.ClusterInfo{
		ClusterID: c.ClusterID(), NodeID: c.cfg.NodeID, LeaderID: status.Lead,
		Term: c.r.Term(), CommitIndex: c.r.CommitIndex(), AppliedIndex: applied,
		Voter: c.isVoter(), Quorum: view.QuorumHealth(c.r.Quorum()),
	}
	cs := c.r.ConfState()
	learners := map[uint64]bool{}
	for _, id := range cs.GetLearners() {
		learners[id] = true
	}
	ids := append(append([]uint64{}, cs.GetVoters()...), cs.GetLearners()...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		addr, _ := c.r.MemberAddress(id)
		cj := view.ClusterMember{ID: id, Address: addr, Voter: !learners[id]}
		switch {
		case learners[id]:
			cj.Role = "learner"
		case id == status.Lead:
			cj.Role = "leader"
		default:
			cj.Role = "follower"
		}
		if pr, ok := status.Progress[id]; ok && status.RaftState == raft.StateLeader {
			cj.MatchIndex = pr.Match
			cj.Reachable = pr.RecentActive || id == c.cfg.NodeID
		}
		if id == c.cfg.NodeID {
			cj.Reachable = true
			if status.RaftState != raft.StateLeader {
				if ls, err := c.r.LastIndex(); err == nil {
					cj.MatchIndex = ls
				}
			}
		} else if ps := c.r.PeerStatus(id); !ps.LastContact.IsZero() {
			ms := time.Since(ps.LastContact).Milliseconds()
			cj.LastContactMS = &ms
			if status.RaftState != raft.StateLeader {
				cj.Reachable = ps.Connected
			}
		}
		out.Controllers = append(out.Controllers, cj)
	}
	return out
}

// controllerList is the leader's replication view, in the style of
// kafka-metadata-quorum describe --replication.
func (c *Controller) controllerList() []view.ControllerInfo {
	status := c.r.Status()
	last, _ := c.r.LastIndex()
	voters, learners := c.r.Members()
	ids := append(sortedIDs(voters), sortedIDs(learners)...)
	out := make([]view.ControllerInfo, 0, len(ids))
	for _, id := range ids {
		addr, httpAddr := c.r.MemberAddress(id)
		ci := view.ControllerInfo{ID: id, Address: addr, HTTPAddress: httpAddr, Voter: voters[id]}
		switch {
		case learners[id]:
			ci.Role = "learner"
		case id == status.Lead:
			ci.Role = "leader"
		default:
			ci.Role = "follower"
		}
		if id == c.cfg.NodeID {
			ci.MatchIndex, ci.Reachable = last, true
			zero := int64(0)
			ci.LastContactMS = &zero
		} else {
			ci.MatchIndex, ci.Reachable = status.Progress[id].Match, c.r.Reachable(status, id)
			if heard := c.r.LastHeard(id); !heard.IsZero() {
				ms := time.Since(heard).Milliseconds()
				ci.LastContactMS = &ms
			}
		}
		if last > ci.MatchIndex {
			ci.Lag = last - ci.MatchIndex
		}
		out = append(out, ci)
	}
	return out
}

// isVoter reports whether this controller votes in the current configuration.
func (c *Controller) isVoter() bool {
	voters, _ := c.r.Members()
	return voters[c.cfg.NodeID]
}

// workerView merges the replicated workers with the leader's liveness.
func (c *Controller) workerView(now time.Time) view.WorkerList {
	views, leader := c.workers.Views(now)
	out := view.WorkerList{Source: "follower", NodeID: c.cfg.NodeID, LeaderID: c.LeaderID(), Workers: []view.WorkerInfo{}}
	if leader {
		out.Source = "leader"
		out.ControllerEpoch = c.workers.ControllerEpoch()
	}
	for _, w := range c.State().Workers() {
		wj := view.WorkerInfo{
			ID: w.ID, Epoch: w.Epoch, State: string(w.State), Incarnation: w.Incarnation,
			Addresses: w.Addresses, Labels: w.Labels, Capacity: view.Capacity(w.Capacity),
			RegisteredAt: view.FormatMS(w.RegisteredAtMS), StateChangedAt: view.FormatMS(w.StateChangedAtMS),
			Reason: w.Reason, Version: w.Version,
		}
		if wj.Addresses == nil {
			wj.Addresses = []string{}
		}
		if wj.Labels == nil {
			wj.Labels = map[string]string{}
		}
		if v, ok := views[w.ID]; ok && v.Epoch == w.Epoch && (w.State == metadata.WorkerAlive || w.State == metadata.WorkerDraining) {
			if v.Suspect && w.State == metadata.WorkerAlive {
				wj.State = "suspect"
			}
			if v.Heard {
				age := v.Age.Milliseconds()
				wj.LastHeartbeatAgeMS = &age
			}
			if v.Load != nil {
				wj.Load = &view.Load{CPUMillis: v.Load.CPUMillis, MemoryMB: v.Load.MemoryMB, RunningTasks: v.Load.RunningTasks}
			}
		}
		out.Workers = append(out.Workers, wj)
	}
	return out
}

// WorkerCounts counts workers per API state (alive, suspect, fenced,
// draining, left): the leader's view, with liveness; a follower's has
// the replicated states only.
func (c *Controller) WorkerCounts(now time.Time) map[string]int {
	counts := make(map[string]int, len(view.WorkerStates))
	for _, s := range view.WorkerStates {
		counts[s] = 0
	}
	for _, w := range c.workerView(now).Workers {
		counts[w.State]++
	}
	return counts
}
