package controller

import (
	"fmt"
	"strings"
	"sync"

	"github.com/corral-dev/corral/metadata"
)

// Watch defaults.
const (
	// DefaultWatchHistory is how many events the hub keeps for resuming.
	DefaultWatchHistory = 100000
	// MaxWatchHistoryBytes bounds the keys and values held by the window;
	// the oldest events are dropped first when either bound is reached.
	MaxWatchHistoryBytes = 128 << 20
	// DefaultWatchBuffer is how many undelivered events one watcher may
	// have before it is cut off with a resume error.
	DefaultWatchBuffer = 4096
)

// watchHub keeps a bounded window of recent events and fans them out to
// watchers. publish never blocks: a watcher whose buffer is full is cut.
// The window holds every event with revision in (base, last]; after a
// restart or a snapshot install it starts empty at the current revision.
type watchHub struct {
	mu      sync.Mutex
	base    int64 // events at or below base are not in the window
	last    int64 // revision of the newest event (or base)
	history []metadata.Event
	start   int // ring start in history
	size    int // events in the ring
	bytes   int // keys and values in the ring
	cap     int
	bufSize int
	subs    map[*watcher]struct{}
	closed  bool
}

type watcher struct {
	prefix string
	ch     chan metadata.Event
	// cut is closed when the watcher is dropped; err says why.
	cut  chan struct{}
	err  error
	once sync.Once
}

func (w *watcher) stop(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.cut)
	})
}

func newWatchHub(history, buf int) *watchHub {
	return &watchHub{cap: history, bufSize: buf, history: make([]metadata.Event, history), subs: map[*watcher]struct{}{}}
}

// reset drops the window and starts it at rev; every watcher is cut
// because events before rev may be missing from its stream.
func (h *watchHub) reset(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base, h.last, h.start, h.size, h.bytes = rev, rev, 0, 0, 0
	clear(h.history)
	for w := range h.subs {
		w.stop(&watchError{Code: "resume", Resume: rev + 1,
			Message: fmt.Sprintf("this controller installed a snapshot at revision %d; resume from a revision still in the window", rev)})
		delete(h.subs, w)
	}
}

// close cuts every watcher and refuses new ones (controller shutdown), so
// open streams do not hold up the HTTP server's graceful shutdown.
func (h *watchHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.subs {
		w.stop(&watchError{Code: "resume", Resume: h.last + 1, Message: "controller is stopping; resume on another controller"})
		delete(h.subs, w)
	}
}

// publish records events (in revision order) and hands them to watchers.
// It runs on the raft loop.
func (h *watchHub) publish(evs []metadata.Event) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		if ev.ModRevision <= h.last {
			continue
		}
		for h.size == h.cap || (h.size > 0 && h.bytes+eventBytes(ev) > MaxWatchHistoryBytes) {
			old := &h.history[h.start]
			h.base, h.bytes = old.ModRevision, h.bytes-eventBytes(*old)
			*old = metadata.Event{} // let the value be collected
			h.start = (h.start + 1) % h.cap
			h.size--
		}
		h.history[(h.start+h.size)%h.cap] = ev
		h.size++
		h.bytes += eventBytes(ev)
		h.last = ev.ModRevision
		for w := range h.subs {
			if !strings.HasPrefix(ev.Key, w.prefix) {
				continue
			}
			select {
			case w.ch <- ev:
			default:
				w.stop(&watchError{Code: "watch_overflow", Resume: ev.ModRevision,
					Message: fmt.Sprintf("watcher fell more than %d events behind; resume from revision %d", h.bufSize, ev.ModRevision)})
				delete(h.subs, w)
			}
		}
	}
}

func eventBytes(ev metadata.Event) int { return len(ev.Key) + len(ev.Value) + 64 }

// watchError ends a watch; Resume is the revision to resume from and
// Oldest the oldest revision still available (compacted errors).
type watchError struct {
	Code    string
	Message string
	Resume  int64
	Oldest  int64
}

func (e *watchError) Error() string { return e.Message }

// subscribe registers a watcher for keys with prefix starting at revision
// from (0: after the current revision) and returns the backlog of events
// already in the window. A from older than the window fails.
func (h *watchHub) subscribe(prefix string, from int64) (*watcher, []metadata.Event, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, 0, ErrStopped
	}
	if from == 0 {
		from = h.last + 1
	}
	if from <= h.base {
		return nil, nil, 0, &watchError{Code: "compacted", Oldest: h.base + 1,
			Message: fmt.Sprintf("revision %d is no longer in the watch history; the oldest revision available is %d (read the current state and watch from its revision + 1)", from, h.base+1)}
	}
	var backlog []metadata.Event
	for i := 0; i < h.size; i++ {
		ev := h.history[(h.start+i)%h.cap]
		if ev.ModRevision >= from && strings.HasPrefix(ev.Key, prefix) {
			backlog = append(backlog, ev)
		}
	}
	w := &watcher{prefix: prefix, ch: make(chan metadata.Event, h.bufSize), cut: make(chan struct{})}
	h.subs[w] = struct{}{}
	return w, backlog, h.last, nil
}

func (h *watchHub) unsubscribe(w *watcher) {
	h.mu.Lock()
	delete(h.subs, w)
	h.mu.Unlock()
}

// current returns the newest revision the hub has seen.
func (h *watchHub) current() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// oldest returns the oldest revision a watch can start from.
func (h *watchHub) oldest() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.base + 1
}

func (h *watchHub) watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
