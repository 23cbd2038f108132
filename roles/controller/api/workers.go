package api

import (
	"net/http"
	"os"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/api/view"
	"github.com/corral-dev/corral/transport"
)

// proxyWorkersToLeader answers a follower's worker request from the
// leader, which alone knows liveness. It reports false when it could not
// (no leader, address unknown, already forwarded, leader unreachable).
func (s *Server) proxyWorkersToLeader(w http.ResponseWriter, r *http.Request) bool {
	lead := s.cluster.LeaderID()
	if lead == 0 || lead == s.cfg.NodeID || r.Header.Get(forwardedHeader) != "" {
		return false
	}
	req, err := s.leaderRequest(r, http.MethodGet, lead, nil)
	if err != nil {
		return false
	}
	resp, err := s.peerClient(2 * time.Second).Do(req)
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
		return nil, badRequest("state must be one of %v, got %q", view.WorkerStates, state)
	}
	if !s.cluster.IsLeader() && s.proxyWorkersToLeader(w, r) {
		return nil, nil
	}
	list := s.workers.Workers(time.Now())
	if state != "" {
		kept := list.Workers[:0]
		for _, wj := range list.Workers {
			if wj.State == state {
				kept = append(kept, wj)
			}
		}
		list.Workers = kept
	}
	return list, nil
}

func (s *Server) handleWorker(w http.ResponseWriter, r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := metadata.ValidateWorkerID(id); err != nil {
		return nil, badRequest("%v", err)
	}
	if !s.cluster.IsLeader() && s.proxyWorkersToLeader(w, r) {
		return nil, nil
	}
	list := s.workers.Workers(time.Now())
	for _, wj := range list.Workers {
		if wj.ID == id {
			return struct {
				view.WorkerInfo
				Source          string `json:"source"`
				ControllerEpoch uint64 `json:"controller_epoch"`
			}{wj, list.Source, list.ControllerEpoch}, nil
		}
	}
	return nil, notFound("not_found", "no worker %q has registered", id)
}

func validWorkerState(s string) bool {
	for _, x := range view.WorkerStates {
		if x == s {
			return true
		}
	}
	return false
}

// clusterWithWorkers is GET /v1/cluster: the quorum view plus this
// process's pid (benchmarks read the leader's CPU and memory from /proc
// when it runs on their machine), worker counts per state and the build
// this controller runs.
type clusterWithWorkers struct {
	view.ClusterInfo
	PID     int                 `json:"pid"`
	Workers map[string]int      `json:"workers"`
	Build   transport.BuildInfo `json:"build"`
}

func (s *Server) handleClusterWithWorkers(http.ResponseWriter, *http.Request) (any, error) {
	return clusterWithWorkers{
		ClusterInfo: s.cluster.View(), PID: os.Getpid(), Workers: s.workers.WorkerCounts(time.Now()),
		Build: transport.Build(),
	}, nil
}
