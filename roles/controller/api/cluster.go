package api

import (
	"net/http"
)

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
