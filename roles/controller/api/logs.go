package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/transport"
)

// logPollEvery is how often a followed log asks the worker for more.
const logPollEvery = 250 * time.Millisecond

// handleAllocLogs streams an allocation's log, read from its worker over
// the worker's session with the leader. Any controller answers: a
// follower relays the leader's stream.
func (s *Server) handleAllocLogs(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	stream := q.Get("stream")
	if stream == "" {
		stream = "stdout"
	}
	if stream != "stdout" && stream != "stderr" {
		return nil, badRequest("stream must be stdout or stderr, got %q", stream)
	}
	follow := q.Get("follow") == "true"
	tail := -1
	if s := q.Get("tail"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 100000 {
			return nil, badRequest("tail must be a number of lines between 0 and 100000, got %q", s)
		}
		tail = n
	}
	id := r.PathValue("id")
	if err := s.allowAlloc(r, id, metadata.ACLRead); err != nil { // jobs.go
		return nil, err
	}
	if !s.cluster.IsLeader() {
		return nil, s.relayToLeader(w, r)
	}
	a, ok := s.store.State().Allocation(id)
	if !ok {
		return nil, allocNotFound(id)
	}
	req := transport.LogRequest{AllocID: id, Stream: stream, Offset: 0, Max: transport.MaxLogChunk}
	if tail >= 0 {
		req.Offset, req.Tail = -1, uint64(tail)
	}
	d, err := s.workers.FetchLog(r.Context(), a.Worker, req)
	if err != nil {
		return nil, err
	}
	if d.Err != "" {
		return nil, notFound("log_unavailable", "%s", d.Err)
	}
	if tail == 0 {
		d.Data = nil // tail=0: nothing old, only what comes next (with follow)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	s.copyLog(r.Context(), w, a.Worker, req, d, follow)
	return nil, nil
}

// copyLog writes chunks until the log is read (or, following, until the
// allocation ended and nothing more came, or the client left).
func (s *Server) copyLog(ctx context.Context, w http.ResponseWriter, worker string, req transport.LogRequest, d *transport.LogData, follow bool) {
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	for {
		if len(d.Data) > 0 {
			if _, err := w.Write(d.Data); err != nil {
				return
			}
			flush()
		}
		if d.Next >= 0 {
			req.Offset, req.Tail = d.Next, 0
		}
		if len(d.Data) == 0 {
			if !follow {
				return
			}
			if a, ok := s.store.State().Allocation(req.AllocID); !ok || a.State.Terminal() {
				// One more read catches what was written before the end.
				if last, err := s.workers.FetchLog(ctx, worker, req); err == nil && len(last.Data) > 0 {
					_, _ = w.Write(last.Data)
					flush()
				}
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(logPollEvery):
			}
		}
		var err error
		if d, err = s.workers.FetchLog(ctx, worker, req); err != nil || d.Err != "" {
			return
		}
	}
}

// relayToLeader forwards a GET to the leader and streams its answer back
// as it comes (a followed log never ends by itself). It returns an error,
// having written nothing, when the leader cannot be asked.
func (s *Server) relayToLeader(w http.ResponseWriter, r *http.Request) error {
	lead := s.cluster.LeaderID()
	if _, ok := s.peerBase(lead); !ok || r.Header.Get(forwardedHeader) != "" {
		return fault.ErrNoLeader
	}
	req, err := s.leaderRequest(r, http.MethodGet, lead, nil)
	if err != nil {
		return err
	}
	resp, err := s.peerClient(0).Do(req) // a followed log never ends by itself
	if err != nil {
		return notLeader("relay to leader %d: %v; retry on another controller", lead, err)
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if err != nil {
			if err != io.EOF {
				s.log.Debug("log relay ended", "err", err)
			}
			return nil
		}
	}
}
