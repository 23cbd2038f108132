// Package view holds the JSON shapes of the API's answers and the pure
// functions that build them from the replicated state: what a client
// sees, kept apart from how requests are routed and answered (package
// api) and from where the data comes from (the controller fills the
// cluster and worker views through api's interfaces). No HTTP here.
package view

import (
	"time"
)

// QuorumHealth says whether the voters can still commit, and how many
// more may fail.
type QuorumHealth struct {
	Voters           int  `json:"voters"`
	Learners         int  `json:"learners"`
	Reachable        int  `json:"reachable"`
	Needed           int  `json:"needed"`
	Healthy          bool `json:"healthy"`
	FailureTolerance int  `json:"failure_tolerance"`
}

// LeaderChange is one change of leader this controller saw.
type LeaderChange struct {
	AtMS int64  `json:"at_ms"`
	From uint64 `json:"from"` // the previous leader (0: none known yet)
	To   uint64 `json:"to"`
	Term uint64 `json:"term"`
}

// WorkerStates are the values of a worker's state field. "suspect" exists
// only in the leader's view.
var WorkerStates = []string{"alive", "suspect", "fenced", "draining", "left"}

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

// ControllerInfo is one controller in the leader's replication view
// (GET /v1/controllers).
type ControllerInfo struct {
	ID            uint64 `json:"id"`
	Address       string `json:"address"`
	HTTPAddress   string `json:"http_address,omitempty"`
	Role          string `json:"role"`
	Voter         bool   `json:"voter"`
	MatchIndex    uint64 `json:"match_index"`
	Lag           uint64 `json:"lag"`
	Reachable     bool   `json:"reachable"`
	LastContactMS *int64 `json:"last_contact_ms,omitempty"`
}

// Capacity is what a worker offers to allocations.
type Capacity struct {
	CPUMillis int64 `json:"cpu_millicores"`
	MemoryMB  int64 `json:"memory_mb"`
}

// Load is what a worker last reported in a heartbeat.
type Load struct {
	CPUMillis    uint64 `json:"cpu_millicores"`
	MemoryMB     uint64 `json:"memory_mb"`
	RunningTasks uint64 `json:"running_tasks"`
}

// WorkerInfo is one worker as GET /v1/workers describes it.
type WorkerInfo struct {
	ID          string            `json:"id"`
	Epoch       uint64            `json:"epoch"`
	State       string            `json:"state"`
	Incarnation string            `json:"incarnation"`
	Addresses   []string          `json:"addresses"`
	Labels      map[string]string `json:"labels"`
	Capacity    Capacity          `json:"capacity"`
	// Load and LastHeartbeatAgeMS are null when unknown: on a follower, or
	// on a new leader that has not heard from the worker yet.
	Load               *Load  `json:"load"`
	LastHeartbeatAgeMS *int64 `json:"last_heartbeat_age_ms"`
	RegisteredAt       string `json:"registered_at"`
	StateChangedAt     string `json:"state_changed_at"`
	Reason             string `json:"reason,omitempty"`
	Version            string `json:"version,omitempty"`
}

// WorkerList is the answer of GET /v1/workers.
type WorkerList struct {
	Workers []WorkerInfo `json:"workers"`
	// Source is "leader" when liveness (suspect, load, ages) is the
	// leader's, "follower" when only replicated state was available.
	Source          string `json:"source"`
	NodeID          uint64 `json:"node_id"`
	LeaderID        uint64 `json:"leader_id"`
	ControllerEpoch uint64 `json:"controller_epoch"`
}

// FormatMS formats a Unix time in milliseconds as RFC 3339 (UTC), or
// "" for 0 (never).
func FormatMS(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
