package api

import (
	"net/http"
)

// ClusterMember is one controller in GET /v1/cluster.
type ClusterMember struct {
	ID            uint64 `json:"id"`
	Address       string `json:"address"`
	Role          string `json:"role"`
	Voter         bool   `json:"voter"`
	MatchIndex    uint64 `json:"match_index"`
	Reachable     bool   `json:"reachable"`
	LastContactMS *int64 `json:"last_contact_ms,omitempty"`
}

// ClusterInfo is the quorum as GET /v1/cluster describes it.
type ClusterInfo struct {
	ClusterID    string          `json:"cluster_id"`
	NodeID       uint64          `json:"node_id"`
	LeaderID     uint64          `json:"leader_id"`
	Term         uint64          `json:"term"`
	CommitIndex  uint64          `json:"commit_index"`
	AppliedIndex uint64          `json:"applied_index"`
	Voter        bool            `json:"voter"`
	Quorum       QuorumHealth    `json:"quorum"`
	Controllers  []ClusterMember `json:"controllers"`
}

// handleReadyz answers 200 only when a leader is known and this controller
// has applied everything it knows to be committed.
func (s *Server) handleReadyz(http.ResponseWriter, *http.Request) (any, error) {
	applied := s.cluster.AppliedIndex()
	commit := s.cluster.CommitIndex()
	leader := s.cluster.LeaderID()
	body := map[string]any{"leader_id": leader, "applied_index": applied, "commit_index": commit,
		"voter": s.cluster.IsVoter(), "quorum": s.cluster.Quorum()}
	switch {
	case leader == 0:
		body["error"], body["code"] = "no leader known", "not_ready"
		return unavailable(body), nil
	case applied < commit:
		body["error"], body["code"] = "still applying committed entries", "not_ready"
		return unavailable(body), nil
	}
	body["status"] = "ready"
	return body, nil
}
