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
func (s *Server) handleKeepAliveStream(w http.ResponseWriter, r *http.Request) (any, error) {
	if !s.cluster.IsLeader() {
		msg := "keep-alive streams are served by the leader only; reconnect to another controller"
		if lead := s.cluster.LeaderID(); lead != 0 {
			if _, addr := s.cluster.MemberAddress(lead); addr != "" {
				msg = fmt.Sprintf("keep-alive streams are served by the leader only: reconnect to controller %d at http://%s", lead, addr)
			}
		}
		return nil, notLeader("%s", msg)
	}
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		return nil, badRequest("this connection cannot carry a full-duplex stream: %v", err)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	s.keepAliveLines(w, r, rc)
	return nil, nil
}

// keepAliveLines answers the stream's request lines. The status is sent:
// an error ends the stream with an error line instead (errorFor's code and
// message, without the status).
func (s *Server) keepAliveLines(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) {
	enc := json.NewEncoder(w)
	fail := func(err error) {
		ae := errorFor(err)
		_ = enc.Encode(map[string]string{"error": ae.Message, "code": ae.Code})
		_ = rc.Flush()
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 4096), maxKeepAliveLine)
	for sc.Scan() {
		ids, err := keepAliveLine(sc.Bytes())
		if err != nil {
			fail(err)
			return
		}
		alive, missing, err := s.coord.KeepAlive(r.Context(), ids)
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

// keepAliveLine decodes one request line of a keep-alive stream: the ids
// of 1 to MaxKeepAliveBatch leases.
func keepAliveLine(line []byte) ([]int64, error) {
	var in struct {
		IDs []int64 `json:"ids"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return nil, badRequest("each line must be {\"ids\": [1, 2, ...]}: %v", err)
	}
	if len(in.IDs) == 0 || len(in.IDs) > MaxKeepAliveBatch {
		return nil, badRequest("ids must name 1 to %d leases, got %d", MaxKeepAliveBatch, len(in.IDs))
	}
	return in.IDs, nil
}
