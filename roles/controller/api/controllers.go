package api

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

	"github.com/corral-dev/corral/roles/controller/fault"
)

// forwardedHeader marks a request a follower proxied to the leader, so a
// stale view of leadership cannot bounce it around.
const forwardedHeader = "X-Corral-Forwarded"

// leaderOnly runs h on the leader; a follower proxies the request to the
// leader's announced HTTP address, so operators can use any endpoint.
func (s *Server) leaderOnly(h func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			writeError(w, badRequest("read request body: %v", err))
			return
		}
		if s.cluster.IsLeader() {
			h(w, r, body)
			return
		}
		s.forwardToLeader(w, r, body)
	}
}

func (s *Server) forwardToLeader(w http.ResponseWriter, r *http.Request, body []byte) {
	lead := s.cluster.LeaderID()
	if lead == 0 {
		writeError(w, fault.ErrNoLeader)
		return
	}
	_, addr := s.cluster.MemberAddress(lead)
	if addr == "" || r.Header.Get(forwardedHeader) != "" || lead == s.cfg.NodeID {
		writeError(w, fault.ErrNotLeader)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		writeError(w, err)
		return
	}
	req.Header.Set(forwardedHeader, strconv.FormatUint(s.cfg.NodeID, 10))
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	resp, err := (&http.Client{Timeout: 4 * s.cfg.RequestTimeout}).Do(req)
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
func (s *Server) waitLeaderHTTP(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	for ctx.Err() == nil {
		if lead := s.cluster.LeaderID(); lead != 0 && lead != s.cfg.NodeID {
			if _, addr := s.cluster.MemberAddress(lead); addr != "" {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.cfg.TickInterval):
		}
	}
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

func (s *Server) handleListControllers(w http.ResponseWriter, _ *http.Request, _ []byte) {
	writeJSON(w, http.StatusOK, map[string]any{
		"leader_id": s.cfg.NodeID, "term": s.cluster.Term(), "controllers": s.cluster.Controllers(),
		"quorum": s.cluster.Quorum(),
	})
}

func (s *Server) handleAddController(w http.ResponseWriter, r *http.Request, body []byte) {
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
	if err := s.cluster.AddController(r.Context(), req.ID, req.Address); err != nil {
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

func (s *Server) handleRemoveController(w http.ResponseWriter, r *http.Request, body []byte) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	force := r.URL.Query().Get("force") == "true"
	err = s.cluster.RemoveController(r.Context(), id, force)
	if errors.Is(err, fault.ErrLeadershipMoved) {
		s.waitLeaderHTTP(r.Context())
		s.forwardToLeader(w, r, body)
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"removed": id})
}

func (s *Server) handleTransferLeader(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := pathID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.cluster.TransferLeader(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"leader_id": id})
}
