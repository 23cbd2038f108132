package client

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event types of a watch.
const (
	EventPut      = "put"
	EventDelete   = "delete"
	EventProgress = "progress" // only with WithProgress: every event up to Revision was delivered
)

// Event is one change seen by a watch (or a progress notification).
type Event struct {
	Type           string
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Version        int64
	Lease          int64
	// Revision is set on progress events.
	Revision int64
}

type wireEvent struct {
	Type           string `json:"type"`
	Key            string `json:"key"`
	Value          string `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease"`
	Revision       int64  `json:"revision"`
	Error          string `json:"error"`
	Code           string `json:"code"`
	ResumeRevision int64  `json:"resume_revision"`
}

// WatchOption configures Watch.
type WatchOption func(*watchOptions)

type watchOptions struct {
	progress         bool
	progressInterval time.Duration
}

// defaultWatchProgress is the progress interval the client asks for; it also bounds how long a silent controller
// is trusted.
const defaultWatchProgress = 2 * time.Second

// WithProgress delivers progress events, every interval while the watch is idle (0: 2s).
func WithProgress(interval time.Duration) WatchOption {
	return func(o *watchOptions) { o.progress, o.progressInterval = true, interval }
}

// Watcher is a running watch. It reconnects by itself (to any endpoint) and resumes from the revision after the
// last event it delivered, so its events arrive exactly once, in revision order, without gaps, until it ends.
type Watcher struct {
	events chan Event
	done   chan struct{}
	mu     sync.Mutex
	err    error
	next   int64
}

// Events delivers the changes; it is closed when the watch ends (see Err).
func (w *Watcher) Events() <-chan Event { return w.events }

// Err says why the watch ended: the context's error, or ErrCompacted when the revision to resume from left the
// server's history (re-read the state and watch again).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// NextRevision is the revision the watch would resume from.
func (w *Watcher) NextRevision() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next
}

// Watch streams puts and deletes of keys starting with prefix from fromRevision on (0: changes after now).
func (c *Client) Watch(ctx context.Context, prefix string, fromRevision int64, opts ...WatchOption) *Watcher {
	var o watchOptions
	for _, opt := range opts {
		opt(&o)
	}
	w := &Watcher{events: make(chan Event, 64), done: make(chan struct{}), next: fromRevision}
	go w.run(ctx, c, prefix, o)
	return w
}

func (w *Watcher) finish(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	close(w.events)
}

func (w *Watcher) run(ctx context.Context, c *Client, prefix string, o watchOptions) {
	path := "/v1/watch/" + strings.TrimPrefix(keyPath(prefix), "/v1/kv/")
	backoff := 50 * time.Millisecond
	compacted := 0
	for {
		err := w.stream(ctx, c, path, o)
		if ctx.Err() != nil {
			w.finish(ctx.Err())
			return
		}
		if errors.Is(err, ErrCompacted) {
			// Each controller keeps its own window (a restarted one starts
			// afresh): ask the others before giving up.
			if compacted++; compacted >= len(c.endpoints) {
				w.finish(err)
				return
			}
			c.preferred.Add(1)
			continue
		}
		compacted = 0
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			w.finish(ctx.Err())
			return
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// parseWatchLine decodes one NDJSON line of a watch stream (values base64).
// An "error" line becomes an error (ErrCompacted for "compacted").
func parseWatchLine(line []byte) (Event, error) {
	var we wireEvent
	if err := json.Unmarshal(line, &we); err != nil {
		return Event{}, fmt.Errorf("decode watch line: %w", err)
	}
	switch we.Type {
	case EventPut, EventDelete:
		v, err := base64.StdEncoding.DecodeString(we.Value)
		if err != nil {
			return Event{}, fmt.Errorf("decode watch value of %q: %w", we.Key, err)
		}
		if we.ModRevision <= 0 {
			return Event{}, fmt.Errorf("decode watch line: %s event without a revision", we.Type)
		}
		return Event{Type: we.Type, Key: we.Key, Value: v, CreateRevision: we.CreateRevision,
			ModRevision: we.ModRevision, Version: we.Version, Lease: we.Lease}, nil
	case EventProgress:
		return Event{Type: EventProgress, Revision: we.Revision}, nil
	case "error":
		if we.Code == "compacted" {
			return Event{}, fmt.Errorf("watch: %s: %w", we.Error, ErrCompacted)
		}
		return Event{}, fmt.Errorf("watch cut (%s, resume at %d): %s", we.Code, we.ResumeRevision, we.Error)
	}
	return Event{Type: we.Type}, nil
}

// stream runs one watch connection until it fails.
func (w *Watcher) stream(ctx context.Context, c *Client, path string, o watchOptions) error {
	q := url.Values{"encoding": {"base64"}}
	if n := w.NextRevision(); n > 0 {
		q.Set("from_revision", strconv.FormatInt(n, 10))
	}
	interval := o.progressInterval
	if interval <= 0 {
		interval = defaultWatchProgress
	}
	q.Set("progress_interval", interval.String())
	// A controller that stopped answering (paused, partitioned) sends no
	// progress lines: give up on it after a few intervals and move on.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(3*interval+time.Second, func() {
		c.preferred.Add(1)
		cancel()
	})
	defer idle.Stop()
	resp, err := c.doStream(sctx, call{method: http.MethodGet, path: path, query: q})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		idle.Reset(3*interval + time.Second)
		ev, err := parseWatchLine(sc.Bytes())
		if err != nil {
			return err
		}
		switch ev.Type {
		case EventPut, EventDelete:
			if ev.ModRevision < w.NextRevision() {
				continue // already delivered
			}
		case EventProgress:
			w.mu.Lock()
			if w.next <= ev.Revision {
				w.next = ev.Revision + 1
			}
			w.mu.Unlock()
			if !o.progress {
				continue
			}
		default:
			continue // a line type this client does not know
		}
		select {
		case w.events <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
		if ev.Type != EventProgress {
			w.mu.Lock()
			w.next = ev.ModRevision + 1
			w.mu.Unlock()
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read watch stream: %w", err)
	}
	return errors.New("watch stream ended")
}
