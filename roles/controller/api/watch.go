package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// DefaultWatchProgress is how often an idle watch gets a progress line.
const DefaultWatchProgress = 5 * time.Second

// WatchLine is one NDJSON line of a watch stream.
// WatchLine is one line of a watch stream (JSON lines): an event, a
// progress mark or the error that ended it.
type WatchLine struct {
	Type           string `json:"type"` // put, delete, progress, error
	Key            string `json:"key,omitempty"`
	Value          string `json:"value,omitempty"`
	Encoding       string `json:"encoding,omitempty"`
	CreateRevision int64  `json:"create_revision,omitempty"`
	ModRevision    int64  `json:"mod_revision,omitempty"`
	Version        int64  `json:"version,omitempty"`
	Lease          int64  `json:"lease,omitempty"`
	// Revision: for progress lines, every event up to it was sent.
	Revision int64 `json:"revision,omitempty"`
	// Error lines.
	Error          string `json:"error,omitempty"`
	Code           string `json:"code,omitempty"`
	ResumeRevision int64  `json:"resume_revision,omitempty"`
	OldestRevision int64  `json:"oldest_revision,omitempty"`
}

func eventLine(ev metadata.Event, enc string) WatchLine {
	l := WatchLine{Type: string(ev.Type), Key: ev.Key, CreateRevision: ev.CreateRevision,
		ModRevision: ev.ModRevision, Version: ev.Version, Lease: ev.Lease}
	if enc == "base64" {
		l.Value, l.Encoding = base64.StdEncoding.EncodeToString(ev.Value), "base64"
	} else {
		l.Value = string(ev.Value)
	}
	return l
}

// handleWatch is GET /v1/watch/{prefix...}: an NDJSON stream of the puts
// and deletes of keys under prefix from from_revision on, served from this
// controller's applied state (see docs/API.md).
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	from, _, err := queryInt(r, "from_revision")
	if err != nil {
		return nil, err
	}
	enc := q.Get("encoding")
	if err := checkEncoding(enc); err != nil {
		return nil, err
	}
	progress := DefaultWatchProgress
	if s := q.Get("progress_interval"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 50*time.Millisecond || d > time.Hour {
			return nil, badRequest("progress_interval must be a duration between 50ms and 1h, got %q", s)
		}
		progress = d
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		return nil, badRequest("streaming is not supported on this connection")
	}
	release, err := s.takeWatch(r) // acl_limits.go
	if err != nil {
		return nil, err
	}
	defer release()
	wt, backlog, last, err := s.hub.Subscribe(r.PathValue("prefix"), from)
	if err != nil {
		return nil, err // a *WatchError is 410 with the oldest revision kept
	}
	defer s.hub.Unsubscribe(wt)
	if from == 0 {
		from = last + 1
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s.streamWatch(w, fl, r, wt, backlog, from, enc, progress)
	return nil, nil
}

// streamWatch writes the watch's lines once the status is sent: the
// first progress line, the backlog, then events and progress marks until
// the watch is cut (an error line ends it), the client leaves or the
// controller stops.
func (s *Server) streamWatch(w http.ResponseWriter, fl http.Flusher, r *http.Request, wt Watch, backlog []metadata.Event, from int64, enc string, progress time.Duration) {
	je := json.NewEncoder(w)
	sent := from - 1 // every matching event up to sent was written
	// The first line tells the client the watch is established.
	if err := je.Encode(WatchLine{Type: "progress", Revision: sent}); err != nil {
		return
	}
	for _, ev := range backlog {
		if err := je.Encode(eventLine(ev, enc)); err != nil {
			return
		}
		sent = ev.ModRevision
	}
	fl.Flush()
	tick := time.NewTicker(progress)
	defer tick.Stop()
	idle := true
	var buf []metadata.Event
	// write encodes the queued events not yet sent; it reuses buf and
	// drops it after a burst so an idle watch holds nothing.
	write := func() error {
		buf = wt.Take(buf[:0])
		defer func() {
			clear(buf)
			if cap(buf) > 64 {
				buf = nil
			}
		}()
		for _, ev := range buf {
			if ev.ModRevision <= sent {
				continue
			}
			if err := je.Encode(eventLine(ev, enc)); err != nil {
				return err
			}
			sent = ev.ModRevision
		}
		return nil
	}
	for {
		select {
		case <-wt.Ready():
			if err := write(); err != nil {
				return
			}
			idle = false
			fl.Flush()
		case <-tick.C:
			if !idle {
				idle = true
				continue
			}
			// Every event up to cur was queued for this watch before
			// Current returned, unless the watch was cut: then the
			// Cut case below ends the stream with its resume revision.
			cur := s.hub.Current()
			if err := write(); err != nil {
				return
			}
			select {
			case <-wt.Cut():
				continue
			default:
			}
			if err := je.Encode(WatchLine{Type: "progress", Revision: max(cur, sent)}); err != nil {
				return
			}
			fl.Flush()
		case <-wt.Cut():
			// Deliver what is queued, then the error.
			_ = write()
			we, _ := wt.Err().(*WatchError)
			line := WatchLine{Type: "error", Error: wt.Err().Error(), Code: "watch_cut", ResumeRevision: sent + 1}
			if we != nil {
				line.Code = we.Code
			}
			_ = je.Encode(line)
			fl.Flush()
			return
		case <-r.Context().Done():
			return
		case <-s.stopc:
			return
		}
	}
}
