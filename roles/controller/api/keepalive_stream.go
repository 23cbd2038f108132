package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
)

// maxKeepAliveLine bounds one request line of a keep-alive stream.
const maxKeepAliveLine = 64 << 10

// handleKeepAliveStream is POST /v1/leases/keepalive/stream: a long-lived,
// full-duplex NDJSON exchange for clients that hold many leases. Each
// request line {"ids": [...]} (1 to MaxKeepAliveBatch ids) is answered, in
// order, by a line {"leases": [...], "not_found": [...]} with the batch
// keep-alive semantics. Only the leader serves it (a follower answers 503
// not_leader so the client reconnects elsewhere); the stream ends with an
// error line when this controller stops leading or a line is malformed.
func (s *Server) handleKeepAliveStream(w http.ResponseWriter, r *http.Request) {
	if !s.cluster.IsLeader() {
		msg := "keep-alive streams are served by the leader only; reconnect to another controller"
		if lead := s.cluster.LeaderID(); lead != 0 {
			if _, addr := s.cluster.MemberAddress(lead); addr != "" {
				msg = fmt.Sprintf("keep-alive streams are served by the leader only: reconnect to controller %d at http://%s", lead, addr)
			}
		}
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: "not_leader", Message: msg})
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		writeError(w, badRequest("this connection cannot carry a full-duplex stream: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	fail := func(err error) {
		ae := errorFor(err)
		_ = enc.Encode(map[string]string{"error": ae.Message, "code": ae.Code})
		_ = rc.Flush()
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 4096), maxKeepAliveLine)
	for sc.Scan() {
		var in struct {
			IDs []int64 `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			fail(badRequest("each line must be {\"ids\": [1, 2, ...]}: %v", err))
			return
		}
		if len(in.IDs) == 0 || len(in.IDs) > MaxKeepAliveBatch {
			fail(badRequest("ids must name 1 to %d leases, got %d", MaxKeepAliveBatch, len(in.IDs)))
			return
		}
		alive, missing, err := s.coord.KeepAlive(r.Context(), in.IDs)
		if err != nil {
			fail(err)
			return
		}
		if missing == nil {
			missing = []int64{}
		}
		if err := enc.Encode(map[string]any{"leases": leasesOut(alive), "not_found": missing}); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if err := sc.Err(); err != nil {
		fail(badRequest("read keep-alive stream: %v", err))
	}
}
