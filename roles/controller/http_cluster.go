package controller

import (
	"net/http"
	"sort"
	"time"

	"go.etcd.io/raft/v3"
)

type controllerJSON struct {
	ID            uint64 `json:"id"`
	Address       string `json:"address"`
	Role          string `json:"role"`
	Voter         bool   `json:"voter"`
	MatchIndex    uint64 `json:"match_index"`
	Reachable     bool   `json:"reachable"`
	LastContactMS *int64 `json:"last_contact_ms,omitempty"`
}

type clusterJSON struct {
	ClusterID    string           `json:"cluster_id"`
	NodeID       uint64           `json:"node_id"`
	LeaderID     uint64           `json:"leader_id"`
	Term         uint64           `json:"term"`
	CommitIndex  uint64           `json:"commit_index"`
	AppliedIndex uint64           `json:"applied_index"`
	Voter        bool             `json:"voter"`
	Quorum       quorumHealth     `json:"quorum"`
	Controllers  []controllerJSON `json:"controllers"`
}

// clusterView describes the quorum as this controller sees it. Only the
// leader knows followers' match indexes; a follower reports its own.
func (c *Controller) clusterView() clusterJSON {
	status := c.node.Status()
	applied, _ := c.applied.get()
	out := clusterJSON{
		ClusterID: c.ClusterID(), NodeID: c.cfg.NodeID, LeaderID: status.Lead,
		Term: c.term.Load(), CommitIndex: c.commit.Load(), AppliedIndex: applied,
		Voter: c.isVoter(), Quorum: c.quorumHealth(),
	}
	cs := c.currentConfState()
	learners := map[uint64]bool{}
	for _, id := range cs.GetLearners() {
		learners[id] = true
	}
	ids := append(append([]uint64{}, cs.GetVoters()...), cs.GetLearners()...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		addr, _ := c.memberAddress(id)
		cj := controllerJSON{ID: id, Address: addr, Voter: !learners[id]}
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
				if ls, err := c.store.LastIndex(); err == nil {
					cj.MatchIndex = ls
				}
			}
		} else if ps := c.tr.PeerStatus(id); !ps.LastContact.IsZero() {
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

// handleReadyz answers 200 only when a leader is known and this controller
// has applied everything it knows to be committed.
func (c *Controller) handleReadyz(w http.ResponseWriter, _ *http.Request) {
	applied, _ := c.applied.get()
	commit := c.commit.Load()
	leader := c.leader.Load()
	body := map[string]any{"leader_id": leader, "applied_index": applied, "commit_index": commit,
		"voter": c.isVoter(), "quorum": c.quorumHealth()}
	switch {
	case leader == 0:
		body["error"], body["code"] = "no leader known", "not_ready"
		writeJSON(w, http.StatusServiceUnavailable, body)
	case applied < commit:
		body["error"], body["code"] = "still applying committed entries", "not_ready"
		writeJSON(w, http.StatusServiceUnavailable, body)
	default:
		body["status"] = "ready"
		writeJSON(w, http.StatusOK, body)
	}
}
