package client

import (
	"context"
	"net/http"
)

// Controller is one controller as seen by the controller that answered a Cluster call.
type Controller struct {
	ID      uint64
	Address string
	// Role is the controller's raft role as known to the answering controller ("leader", "follower", ...).
	Role string
	// MatchIndex is the highest log index known to be replicated on this controller (meaningful when the answering
	// controller is the leader).
	MatchIndex uint64
	Reachable  bool
}

// ClusterStatus is the answer of GET /v1/cluster.
type ClusterStatus struct {
	ClusterID    string
	LeaderID     uint64 // 0 when no leader is known
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	Controllers  []Controller
	// NodeID is the controller that answered and PID its process id (for tools that measure a local leader).
	NodeID uint64
	PID    int
	// Workers counts workers per state (alive, suspect, fenced, draining, left).
	Workers map[string]int
}

// Cluster returns the cluster's membership and raft progress as seen by the first endpoint that answers.
func (c *Client) Cluster(ctx context.Context) (*ClusterStatus, error) {
	var out struct {
		ClusterID    string         `json:"cluster_id"`
		LeaderID     uint64         `json:"leader_id"`
		Term         uint64         `json:"term"`
		CommitIndex  uint64         `json:"commit_index"`
		AppliedIndex uint64         `json:"applied_index"`
		NodeID       uint64         `json:"node_id"`
		PID          int            `json:"pid"`
		Workers      map[string]int `json:"workers"`
		Controllers  []struct {
			ID         uint64 `json:"id"`
			Address    string `json:"address"`
			Role       string `json:"role"`
			MatchIndex uint64 `json:"match_index"`
			Reachable  bool   `json:"reachable"`
		} `json:"controllers"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/cluster"}, &out); err != nil {
		return nil, err
	}
	st := &ClusterStatus{
		ClusterID:    out.ClusterID,
		LeaderID:     out.LeaderID,
		Term:         out.Term,
		CommitIndex:  out.CommitIndex,
		AppliedIndex: out.AppliedIndex,
		NodeID:       out.NodeID,
		PID:          out.PID,
		Workers:      out.Workers,
		Controllers:  make([]Controller, len(out.Controllers)),
	}
	for i, ct := range out.Controllers {
		st.Controllers[i] = Controller{
			ID: ct.ID, Address: ct.Address, Role: ct.Role, MatchIndex: ct.MatchIndex, Reachable: ct.Reachable,
		}
	}
	return st, nil
}
