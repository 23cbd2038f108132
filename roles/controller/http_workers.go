package controller

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/corral-dev/corral/metadata"
)

type capacityJSON struct {
	CPUMillis int64 `json:"cpu_millicores"`
	MemoryMB  int64 `json:"memory_mb"`
}

type loadJSON struct {
	CPUMillis    uint64 `json:"cpu_millicores"`
	MemoryMB     uint64 `json:"memory_mb"`
	RunningTasks uint64 `json:"running_tasks"`
}

type workerJSON struct {
	ID          string            `json:"id"`
	Epoch       uint64            `json:"epoch"`
	State       string            `json:"state"`
	Incarnation string            `json:"incarnation"`
	Addresses   []string          `json:"addresses"`
	Labels      map[string]string `json:"labels"`
	Capacity    capacityJSON      `json:"capacity"`
	// Load and LastHeartbeatAgeMS are null when unknown: on a follower, or
	// on a new leader that has not heard from the worker yet.
	Load               *loadJSON `json:"load"`
	LastHeartbeatAgeMS *int64    `json:"last_heartbeat_age_ms"`
	RegisteredAt       string    `json:"registered_at"`
	StateChangedAt     string    `json:"state_changed_at"`
	Reason             string    `json:"reason,omitempty"`
	Version            string    `json:"version,omitempty"`
}

type workersJSON struct {
	Workers []workerJSON `json:"workers"`
	// Source is "leader" when liveness (suspect, load, ages) is the
	// leader's, "follower" when only replicated state was available.
	Source          string `json:"source"`
	NodeID          uint64 `json:"node_id"`
	LeaderID        uint64 `json:"leader_id"`
	ControllerEpoch uint64 `json:"controller_epoch"`
}

func msTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// workerView merges the replicated workers with the leader's liveness.
func (c *Controller) workerView(now time.Time) workersJSON {
	views, leader := c.workers.Views(now)
	out := workersJSON{Source: "follower", NodeID: c.cfg.NodeID, LeaderID: c.LeaderID(), Workers: []workerJSON{}}
	if leader {
		out.Source = "leader"
		out.ControllerEpoch = c.workers.ControllerEpoch()
	}
	for _, w := range c.State().Workers() {
		wj := workerJSON{
			ID: w.ID, Epoch: w.Epoch, State: string(w.State), Incarnation: w.Incarnation,
			Addresses: w.Addresses, Labels: w.Labels, Capacity: capacityJSON(w.Capacity),
			RegisteredAt: msTime(w.RegisteredAtMS), StateChangedAt: msTime(w.StateChangedAtMS),
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
				wj.Load = &loadJSON{CPUMillis: v.Load.CPUMillis, MemoryMB: v.Load.MemoryMB, RunningTasks: v.Load.RunningTasks}
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
	counts := make(map[string]int, len(workerStates))
	for _, s := range workerStates {
		counts[s] = 0
	}
	for _, w := range c.workerView(now).Workers {
		counts[w.State]++
	}
	return counts
}

// proxyWorkersToLeader answers a follower's worker request from the
// leader, which alone knows liveness. It reports false when it could not
// (no leader, address unknown, already forwarded, leader unreachable).
func (c *Controller) proxyWorkersToLeader(w http.ResponseWriter, r *http.Request) bool {
	lead := c.LeaderID()
	if lead == 0 || lead == c.cfg.NodeID || r.Header.Get(forwardedHeader) != "" {
		return false
	}
	_, addr := c.memberAddress(lead)
	if addr == "" {
		return false
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://"+addr+r.URL.RequestURI(), nil)
	if err != nil {
		return false
	}
	req.Header.Set(forwardedHeader, strconv.FormatUint(c.cfg.NodeID, 10))
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		c.log.Debug("could not ask the leader about workers; answering from replicated state", "leader", lead, "err", err)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return false
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
	return true
}

func (c *Controller) handleWorkers(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	if state != "" && !validWorkerState(state) {
		writeError(w, badRequest("state must be one of %v, got %q", workerStates, state))
		return
	}
	if !c.isLeader.Load() && c.proxyWorkersToLeader(w, r) {
		return
	}
	view := c.workerView(time.Now())
	if state != "" {
		kept := view.Workers[:0]
		for _, wj := range view.Workers {
			if wj.State == state {
				kept = append(kept, wj)
			}
		}
		view.Workers = kept
	}
	writeJSON(w, http.StatusOK, view)
}

func (c *Controller) handleWorker(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := metadata.ValidateWorkerID(id); err != nil {
		writeError(w, badRequest("%v", err))
		return
	}
	if !c.isLeader.Load() && c.proxyWorkersToLeader(w, r) {
		return
	}
	view := c.workerView(time.Now())
	for _, wj := range view.Workers {
		if wj.ID == id {
			writeJSON(w, http.StatusOK, struct {
				workerJSON
				Source          string `json:"source"`
				ControllerEpoch uint64 `json:"controller_epoch"`
			}{wj, view.Source, view.ControllerEpoch})
			return
		}
	}
	writeJSON(w, http.StatusNotFound, &apiError{Code: "not_found", Message: fmt.Sprintf("no worker %q has registered", id)})
}

func validWorkerState(s string) bool {
	for _, x := range workerStates {
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
	clusterJSON
	PID     int            `json:"pid"`
	Workers map[string]int `json:"workers"`
}

func (c *Controller) handleClusterWithWorkers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, clusterWithWorkers{
		clusterJSON: c.clusterView(), PID: os.Getpid(), Workers: c.WorkerCounts(time.Now()),
	})
}
