package api

import "net/http"

// LeaderHeader names the leader's announced API address (HOST:PORT) on
// every answer a follower gives. Clients that list that address among
// their endpoints send their next calls there: a write served by the
// leader skips the follower's HTTP stack and the forwarding hop (raft's
// MsgProp, then the commit travelling back): about 13 % of the
// controllers' CPU per put on a busy cluster, and a hop of its latency
// (docs/PERFORMANCE.md, "Clients on the leader"). The leader itself sends
// nothing: a client already there stays. The value is a hint, never an
// order: a client only moves to an endpoint its operator listed.
const LeaderHeader = "X-Corral-Leader"

// leaderHint sets LeaderHeader before next writes anything.
func (s *Server) leaderHint(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if addr := s.leaderAPIAddr(); addr != "" {
			w.Header().Set(LeaderHeader, addr)
		}
		next.ServeHTTP(w, r)
	})
}

// leaderAPIAddr is the leader's announced API address when another
// controller leads and its address is known, else "".
func (s *Server) leaderAPIAddr() string {
	lead := s.cluster.LeaderID()
	if lead == 0 || lead == s.cfg.NodeID {
		return ""
	}
	_, addr := s.cluster.MemberAddress(lead)
	return addr
}
