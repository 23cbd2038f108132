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

// leaderHandlerFunc is a leader-only handler; body is the request body,
// read before h runs so a follower can replay it at the leader.
type leaderHandlerFunc func(w http.ResponseWriter, r *http.Request, body []byte) (any, error)

// leaderOnly runs h on the leader; a follower proxies the request to the
// leader's announced HTTP address, so operators can use any endpoint.
func (s *Server) leaderOnly(h leaderHandlerFunc) http.HandlerFunc {
	return s.handle(func(w http.ResponseWriter, r *http.Request) (any, error) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			return nil, badRequest("read request body: %v", err)
		}
		if s.cluster.IsLeader() {
			return h(w, r, body)
		}
		return nil, s.forwardToLeader(w, r, body)
	})
}

// forwardToLeader replays r (with body) at the leader and copies its
// answer to w; it returns an error, having written nothing, when the
// leader or its address is unknown or unreachable.
func (s *Server) forwardToLeader(w http.ResponseWriter, r *http.Request, body []byte) error {
	lead := s.cluster.LeaderID()
	if lead == 0 {
		return fault.ErrNoLeader
	}
	if _, ok := s.peerBase(lead); !ok || r.Header.Get(forwardedHeader) != "" || lead == s.cfg.NodeID {
		return fault.ErrNotLeader
	}
	req, err := s.leaderRequest(r, r.Method, lead, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	resp, err := s.peerClient(4 * s.cfg.RequestTimeout).Do(req)
	if err != nil {
		return notLeader("forward to leader %d: %v; retry on another controller", lead, err)
	}
	defer resp.Body.Close()
	copyResponse(w, resp)
	return nil
}

// copyResponse answers with the leader's answer as it is.
func copyResponse(w http.ResponseWriter, resp *http.Response) {
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
			if _, ok := s.peerBase(lead); ok {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.cfg.TickInterval):
		}
	}
}

func (s *Server) handleListControllers(http.ResponseWriter, *http.Request, []byte) (any, error) {
	return map[string]any{
		"leader_id": s.cfg.NodeID, "term": s.cluster.Term(), "controllers": s.cluster.Controllers(),
		"quorum": s.cluster.Quorum(),
	}, nil
}

func (s *Server) handleAddController(_ http.ResponseWriter, r *http.Request, body []byte) (any, error) {
	var req struct {
		ID      uint64 `json:"id"`
		Address string `json:"address"`
	}
	if err := decodeStrict(bytes.NewReader(body), &req); err != nil {
		return nil, badRequest("body must be {\"id\": N, \"address\": \"HOST:PORT\"}: %v", err)
	}
	if err := s.cluster.AddController(r.Context(), req.ID, req.Address); err != nil {
		return nil, err
	}
	return created(map[string]any{"id": req.ID, "address": req.Address, "role": "learner",
		"message": fmt.Sprintf("controller %d added as a learner; start it with --join and it becomes a voter once caught up", req.ID)}), nil
}

// decodeStrict decodes one JSON value from r into v, refusing unknown
// fields (a typo must not be silently ignored).
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func pathID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		return 0, badRequest("controller id must be a positive integer, got %q", r.PathValue("id"))
	}
	return id, nil
}

func (s *Server) handleRemoveController(w http.ResponseWriter, r *http.Request, body []byte) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	err = s.cluster.RemoveController(r.Context(), id, r.URL.Query().Get("force") == "true")
	if errors.Is(err, fault.ErrLeadershipMoved) {
		s.waitLeaderHTTP(r.Context())
		return nil, s.forwardToLeader(w, r, body)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"removed": id}, nil
}

func (s *Server) handleTransferLeader(_ http.ResponseWriter, r *http.Request, _ []byte) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	if err := s.cluster.TransferLeader(r.Context(), id); err != nil {
		return nil, err
	}
	return map[string]any{"leader_id": id}, nil
}
