package client

import (
	"context"
	"net/http"
	"net/url"
)

// WorkerCapacity is what a worker offers.
type WorkerCapacity struct {
	CPUMillis int64 `json:"cpu_millicores"`
	MemoryMB  int64 `json:"memory_mb"`
}

// WorkerLoad is what a worker last reported in a heartbeat.
type WorkerLoad struct {
	CPUMillis    uint64 `json:"cpu_millicores"`
	MemoryMB     uint64 `json:"memory_mb"`
	RunningTasks uint64 `json:"running_tasks"`
}

// Worker is one worker as GET /v1/workers describes it.
type Worker struct {
	ID string `json:"id"`
	// Epoch grows with every registration of this id.
	Epoch uint64 `json:"epoch"`
	// State is alive, suspect (alive but late; only the leader knows), fenced, draining or left.
	State       string            `json:"state"`
	Incarnation string            `json:"incarnation"`
	Addresses   []string          `json:"addresses"`
	Labels      map[string]string `json:"labels"`
	Capacity    WorkerCapacity    `json:"capacity"`
	// Load and LastHeartbeatAgeMS are nil when unknown (answered from replicated state by a follower, or the leader
	// has not heard from the worker since it took over).
	Load               *WorkerLoad `json:"load"`
	LastHeartbeatAgeMS *int64      `json:"last_heartbeat_age_ms"`
	RegisteredAt       string      `json:"registered_at"`
	StateChangedAt     string      `json:"state_changed_at"`
	Reason             string      `json:"reason"`
	Version            string      `json:"version"`
}

// WorkerList is the answer of GET /v1/workers.
type WorkerList struct {
	Workers []Worker `json:"workers"`
	// Source is "leader" when liveness comes from the leader, "follower" when only replicated state was available.
	Source          string `json:"source"`
	NodeID          uint64 `json:"node_id"`
	LeaderID        uint64 `json:"leader_id"`
	ControllerEpoch uint64 `json:"controller_epoch"`
}

// Workers lists the registered workers; state, if not empty, keeps only workers in that state.
func (c *Client) Workers(ctx context.Context, state string) (*WorkerList, error) {
	var q url.Values
	if state != "" {
		q = url.Values{"state": {state}}
	}
	var out WorkerList
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/workers", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Worker returns one worker (ErrNotFound if it never registered).
func (c *Client) Worker(ctx context.Context, id string) (*Worker, error) {
	var out Worker
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/workers/" + url.PathEscape(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
