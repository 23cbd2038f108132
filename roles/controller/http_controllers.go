package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// forwardedHeader marks a request a follower proxied to the leader, so a
// stale view of leadership cannot bounce it around.
const forwardedHeader = "X-Corral-Forwarded"

// leaderOnly runs h on the leader; a follower proxies the request to the
// leader's announced HTTP address, so operators can use any endpoint.
func (c *Controller) leaderOnly(h func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			writeError(w, badRequest("read request body: %v", err))
			return
		}
		if c.isLeader.Load() {
			h(w, r, body)
			return
		}
		c.forwardToLeader(w, r, body)
	}
}

func (c *Controller) forwardToLeader(w http.ResponseWriter, r *http.Request, body []byte) {
	lead := c.leader.Load()
	if lead == 0 {
		writeError(w, ErrNoLeader)
		return
	}
	_, addr := c.memberAddress(lead)
	if addr == "" || r.Header.Get(forwardedHeader) != "" || lead == c.cfg.NodeID {
		writeError(w, errNotLeader)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		writeError(w, err)
		return
	}
	req.Header.Set(forwardedHeader, strconv.FormatUint(c.cfg.NodeID, 10))
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	resp, err := (&http.Client{Timeout: 4 * c.cfg.RequestTimeout}).Do(req)
	if err != nil {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: "not_leader",
			Message: fmt.Sprintf("forward to leader %d at %s: %v; retry on another controller", lead, addr, err)})
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// waitLeaderHTTP waits (bounded) until another controller leads and its
// HTTP address is known, so a request can be replayed there.
func (c *Controller) waitLeaderHTTP(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	for ctx.Err() == nil {
		if lead := c.leader.Load(); lead != 0 && lead != c.cfg.NodeID {
			if _, addr := c.memberAddress(lead); addr != "" {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.cfg.TickInterval):
		}
	}
}

type controllerInfo struct {
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

// controllerList is the leader's replication view, in the style of
// kafka-metadata-quorum describe --replication.
func (c *Controller) controllerList() []controllerInfo {
	status := c.node.Status()
	last, _ := c.store.LastIndex()
	voters, learners := c.members()
	ids := append(sortedKeys(voters), sortedKeys(learners)...)
	out := make([]controllerInfo, 0, len(ids))
	for _, id := range ids {
		addr, httpAddr := c.memberAddress(id)
		ci := controllerInfo{ID: id, Address: addr, HTTPAddress: httpAddr, Voter: voters[id]}
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
			ci.MatchIndex, ci.Reachable = status.Progress[id].Match, c.reachable(status, id)
			if heard := c.heard.get(id); !heard.IsZero() {
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

func (c *Controller) handleListControllers(w http.ResponseWriter, _ *http.Request, _ []byte) {
	writeJSON(w, http.StatusOK, map[string]any{
		"leader_id": c.cfg.NodeID, "term": c.term.Load(), "controllers": c.controllerList(),
		"quorum": c.quorumHealth(),
	})
}

func (c *Controller) handleAddController(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		ID      uint64 `json:"id"`
		Address string `json:"address"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, badRequest("body must be {\"id\": N, \"address\": \"HOST:PORT\"}: %v", err))
		return
	}
	if err := c.AddController(r.Context(), req.ID, req.Address); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": req.ID, "address": req.Address, "role": "learner",
		"message": fmt.Sprintf("controller %d added as a learner; start it with --join and it becomes a voter once caught up", req.ID)})
}

func pathID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		return 0, badRequest("controller id must be a positive integer, got %q", r.PathValue("id"))
	}
	return id, nil
}

func (c *Controller) handleRemoveController(w http.ResponseWriter, r *http.Request, body []byte) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	force := r.URL.Query().Get("force") == "true"
	err = c.RemoveController(r.Context(), id, force)
	if errors.Is(err, errLeadershipMoved) {
		c.waitLeaderHTTP(r.Context())
		c.forwardToLeader(w, r, body)
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"removed": id})
}

func (c *Controller) handleTransferLeader(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := c.TransferLeader(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"leader_id": id})
}

// isVoter reports whether this controller votes in the current configuration.
func (c *Controller) isVoter() bool {
	voters, _ := c.members()
	return voters[c.cfg.NodeID]
}
