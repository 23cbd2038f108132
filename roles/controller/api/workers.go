package api

import (
	"net/http"
	"os"
	"time"

	"github.com/corral-dev/corral/metadata"
)

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

// proxyWorkersToLeader answers a follower's worker request from the
// leader, which alone knows liveness. It reports false when it could not
// (no leader, address unknown, already forwarded, leader unreachable).
func (s *Server) proxyWorkersToLeader(w http.ResponseWriter, r *http.Request) bool {
	lead := s.cluster.LeaderID()
	if lead == 0 || lead == s.cfg.NodeID || r.Header.Get(forwardedHeader) != "" {
		return false
	}
	_, addr := s.cluster.MemberAddress(lead)
	if addr == "" {
		return false
	}
	req, err := s.leaderRequest(r, http.MethodGet, addr, nil)
	if err != nil {
		return false
	}
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		s.log.Debug("could not ask the leader about workers; answering from replicated state", "leader", lead, "err", err)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return false
	}
	copyResponse(w, resp)
	return true
}

func (s *Server) handleWorkers(w http.ResponseWriter, r *http.Request) (any, error) {
	state := r.URL.Query().Get("state")
	if state != "" && !validWorkerState(state) {
		return nil, badRequest("state must be one of %v, got %q", WorkerStates, state)
	}
	if !s.cluster.IsLeader() && s.proxyWorkersToLeader(w, r) {
		return nil, nil
	}
	view := s.workers.Workers(time.Now())
	if state != "" {
		kept := view.Workers[:0]
		for _, wj := range view.Workers {
			if wj.State == state {
				kept = append(kept, wj)
			}
		}
		view.Workers = kept
	}
	return view, nil
}

func (s *Server) handleWorker(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := metadata.ValidateWorkerID(id); err != nil {
		return nil, badRequest("%v", err)
	}
	if !s.cluster.IsLeader() && s.proxyWorkersToLeader(w, r) {
		return nil, nil
	}
	view := s.workers.Workers(time.Now())
	for _, wj := range view.Workers {
		if wj.ID == id {
			return struct {
				WorkerInfo
				Source          string `json:"source"`
				ControllerEpoch uint64 `json:"controller_epoch"`
			}{wj, view.Source, view.ControllerEpoch}, nil
		}
	}
	return nil, notFound("not_found", "no worker %q has registered", id)
}

func validWorkerState(s string) bool {
	for _, x := range WorkerStates {
		if x == s {
			return true
		}
	}
	return false
}

// clusterWithWorkers is GET /v1/cluster: the quorum view plus this
// process's pid (benchmarks read the leader's CPU and memory from /proc
// when it runs on their machine) and worker counts per state.
type clusterWithWorkers struct {
	ClusterInfo
	PID     int            `json:"pid"`
	Workers map[string]int `json:"workers"`
}

func (s *Server) handleClusterWithWorkers(http.ResponseWriter, *http.Request) (any, error) {
	return clusterWithWorkers{
		ClusterInfo: s.cluster.View(), PID: os.Getpid(), Workers: s.workers.WorkerCounts(time.Now()),
	}, nil
}
