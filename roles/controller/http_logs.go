package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-dev/corral/transport"
)

// logPollEvery is how often a followed log asks the worker for more.
const logPollEvery = 250 * time.Millisecond

// handleAllocLogs streams an allocation's log, read from its worker over
// the worker's session with the leader. Any controller answers: a
// follower relays the leader's stream.
func (c *Controller) handleAllocLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	stream := q.Get("stream")
	if stream == "" {
		stream = "stdout"
	}
	if stream != "stdout" && stream != "stderr" {
		writeError(w, badRequest("stream must be stdout or stderr, got %q", stream))
		return
	}
	follow := q.Get("follow") == "true"
	tail := -1
	if s := q.Get("tail"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 100000 {
			writeError(w, badRequest("tail must be a number of lines between 0 and 100000, got %q", s))
			return
		}
		tail = n
	}
	id := r.PathValue("id")
	if !c.isLeader.Load() {
		c.relayToLeader(w, r)
		return
	}
	a, ok := c.State().Allocation(id)
	if !ok {
		writeError(w, allocNotFound(id))
		return
	}
	req := transport.LogRequest{AllocID: id, Stream: stream, Offset: 0, Max: transport.MaxLogChunk}
	if tail >= 0 {
		req.Offset, req.Tail = -1, uint64(tail)
	}
	d, err := c.fetchLog(r.Context(), a.Worker, req)
	if err == nil && d.Err != "" {
		err = &apiError{Status: http.StatusNotFound, Code: "log_unavailable", Message: d.Err}
	}
	if err == nil && tail == 0 {
		d.Data = nil // tail=0: nothing old, only what comes next (with follow)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	c.copyLog(r.Context(), w, a.Worker, req, d, follow)
}

// copyLog writes chunks until the log is read (or, following, until the
// allocation ended and nothing more came, or the client left).
func (c *Controller) copyLog(ctx context.Context, w http.ResponseWriter, worker string, req transport.LogRequest, d *transport.LogData, follow bool) {
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
			if a, ok := c.State().Allocation(req.AllocID); !ok || a.State.Terminal() {
				// One more read catches what was written before the end.
				if last, err := c.fetchLog(ctx, worker, req); err == nil && len(last.Data) > 0 {
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
		if d, err = c.fetchLog(ctx, worker, req); err != nil || d.Err != "" {
			return
		}
	}
}

// relayToLeader forwards a GET to the leader and streams its answer back
// as it comes (a followed log never ends by itself).
func (c *Controller) relayToLeader(w http.ResponseWriter, r *http.Request) {
	lead := c.leader.Load()
	_, addr := c.memberAddress(lead)
	if lead == 0 || addr == "" || r.Header.Get(forwardedHeader) != "" {
		writeError(w, ErrNoLeader)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, "http://"+addr+r.URL.RequestURI(), nil)
	if err != nil {
		writeError(w, err)
		return
	}
	req.Header.Set(forwardedHeader, strconv.FormatUint(c.cfg.NodeID, 10))
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: "not_leader",
			Message: fmt.Sprintf("relay to leader %d at %s: %v; retry on another controller", lead, addr, err)})
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if err != nil {
			if err != io.EOF {
				c.log.Debug("log relay ended", "err", err)
			}
			return
		}
	}
}
