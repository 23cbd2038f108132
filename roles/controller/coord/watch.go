package coord

import (
	"errors"
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
	// have before it is cut off with a resume error. The buffer is not
	// reserved: it grows on demand up to this bound (and is released
	// once the watcher catches up), so an idle watch costs a few hundred
	// bytes.
	DefaultWatchBuffer = 4096
	// DefaultMaxWatchers is how many watches one controller keeps open
	// at once; Subscribe refuses more with ErrTooManyWatches.
	DefaultMaxWatchers = 10000
	// keepQueue is the queue capacity a watcher keeps once drained; a
	// larger one (left by a burst) is released.
	keepQueue = 64
)

// Hub keeps a bounded window of recent events and fans them out to
// watchers. Publish never blocks: a watcher whose buffer is full is cut.
// The window holds every event with revision in (base, last]; after a
// restart or a snapshot install it starts empty at the current revision.
type Hub struct {
	mu      sync.Mutex
	base    int64 // events at or below base are not in the window
	last    int64 // revision of the newest event (or base)
	history []metadata.Event
	start   int // ring start in history
	size    int // events in the ring
	bytes   int // keys and values in the ring
	cap     int
	bufSize int
	maxSubs int // 0: no limit
	subs    map[*Watcher]struct{}
	closed  bool
}

// Watcher is one subscription: it queues the events of its prefix until
// it is cut (Cut closes; Err says why). Ready is signalled when events
// are queued, Take hands them over. The queue grows on demand up to the
// hub's buffer bound; nothing is reserved up front.
type Watcher struct {
	prefix string
	mu     sync.Mutex
	queue  []metadata.Event
	ready  chan struct{} // capacity 1: "the queue is not empty"
	// cut is closed when the watcher is dropped; err says why.
	cut  chan struct{}
	err  error
	once sync.Once
}

// Ready receives a value when events may be waiting in the queue.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Take appends the queued events, in revision order, to dst and empties
// the queue. Passing the slice a previous Take returned (emptied) lets
// the two buffers be reused.
func (w *Watcher) Take(dst []metadata.Event) []metadata.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queue
	if len(q) == 0 {
		return dst
	}
	if len(dst) == 0 {
		// Swap: the caller gets the queue, the watcher keeps dst (or
		// nothing, if dst is a burst's large buffer).
		if cap(dst) > keepQueue {
			w.queue = nil
		} else {
			clear(dst[:cap(dst)])
			w.queue = dst[:0]
		}
		return q
	}
	dst = append(dst, q...)
	clear(q)
	if cap(q) > keepQueue {
		w.queue = nil // release a burst's buffer
	} else {
		w.queue = q[:0]
	}
	return dst
}

// Pending is the number of queued events.
func (w *Watcher) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// offer queues ev; false means the queue is full (the watcher is cut).
func (w *Watcher) offer(ev metadata.Event, limit int) bool {
	w.mu.Lock()
	if len(w.queue) >= limit {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
	return true
}

// Cut is closed when the hub drops the watcher; events already queued
// are still handed out by Take.
func (w *Watcher) Cut() <-chan struct{} { return w.cut }

// Err says why the watcher was cut (usually a *WatchError); it is set
// once Cut is closed, nil before.
func (w *Watcher) Err() error {
	select {
	case <-w.cut:
		return w.err
	default:
		return nil
	}
}

func (w *Watcher) stop(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.cut)
	})
}

// NewHub returns a hub that keeps up to history events and lets each
// watcher fall up to buf events behind.
func NewHub(history, buf int) *Hub {
	return &Hub{cap: history, bufSize: buf, history: make([]metadata.Event, history), subs: map[*Watcher]struct{}{}}
}

// SetMaxWatchers bounds the open watchers (n <= 0: no bound); watchers
// already open are kept.
func (h *Hub) SetMaxWatchers(n int) {
	h.mu.Lock()
	h.maxSubs = n
	h.mu.Unlock()
}

// Reset drops the window and starts it at rev; every watcher is cut
// because events before rev may be missing from its stream.
func (h *Hub) Reset(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base, h.last, h.start, h.size, h.bytes = rev, rev, 0, 0, 0
	clear(h.history)
	for w := range h.subs {
		w.stop(&WatchError{Code: "resume", Resume: rev + 1,
			Message: fmt.Sprintf("this controller installed a snapshot at revision %d; resume from a revision still in the window", rev)})
		delete(h.subs, w)
	}
}

// Close cuts every watcher and refuses new ones (controller shutdown), so
// open streams do not hold up the HTTP server's graceful shutdown.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.subs {
		w.stop(&WatchError{Code: "resume", Resume: h.last + 1, Message: "controller is stopping; resume on another controller"})
		delete(h.subs, w)
	}
}

// Publish records events (in revision order) and hands them to watchers.
// It runs on the raft loop.
func (h *Hub) Publish(evs []metadata.Event) {
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
			if !w.offer(ev, h.bufSize) {
				w.stop(&WatchError{Code: "watch_overflow", Resume: ev.ModRevision,
					Message: fmt.Sprintf("watcher fell more than %d events behind; resume from revision %d", h.bufSize, ev.ModRevision)})
				delete(h.subs, w)
			}
		}
	}
}

func eventBytes(ev metadata.Event) int { return len(ev.Key) + len(ev.Value) + 64 }

// WatchError ends a watch; Resume is the revision to resume from and
// Oldest the oldest revision still available (compacted errors).
type WatchError struct {
	// Code is the API's error code: resume, watch_overflow or compacted.
	Code string
	// Message is for the user.
	Message string
	// Resume is the revision to resume from (resume, watch_overflow).
	Resume int64
	// Oldest is the oldest revision still in the window (compacted).
	Oldest int64
}

// Error returns the message for the user.
func (e *WatchError) Error() string { return e.Message }

// ErrClosed refuses a subscription once the hub is closed.
var ErrClosed = errors.New("watch hub closed")

// ErrTooManyWatches refuses a subscription past the hub's bound on open
// watchers (SetMaxWatchers).
var ErrTooManyWatches = errors.New("too many open watches on this controller")

// Subscribe registers a watcher for keys with prefix starting at revision
// from (0: after the current revision) and returns the backlog of events
// already in the window and the newest revision the hub has seen. A from
// older than the window fails with a *WatchError (compacted), a closed hub
// with ErrClosed. The caller must Unsubscribe.
func (h *Hub) Subscribe(prefix string, from int64) (*Watcher, []metadata.Event, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, 0, ErrClosed
	}
	if h.maxSubs > 0 && len(h.subs) >= h.maxSubs {
		return nil, nil, 0, fmt.Errorf("%w: %d are open, the limit (--max-watches) is %d; close some or watch a wider prefix", ErrTooManyWatches, len(h.subs), h.maxSubs)
	}
	if from == 0 {
		from = h.last + 1
	}
	if from <= h.base {
		return nil, nil, 0, &WatchError{Code: "compacted", Oldest: h.base + 1,
			Message: fmt.Sprintf("revision %d is no longer in the watch history; the oldest revision available is %d (read the current state and watch from its revision + 1)", from, h.base+1)}
	}
	var backlog []metadata.Event
	for i := 0; i < h.size; i++ {
		ev := h.history[(h.start+i)%h.cap]
		if ev.ModRevision >= from && strings.HasPrefix(ev.Key, prefix) {
			backlog = append(backlog, ev)
		}
	}
	w := &Watcher{prefix: prefix, ready: make(chan struct{}, 1), cut: make(chan struct{})}
	h.subs[w] = struct{}{}
	return w, backlog, h.last, nil
}

// Unsubscribe drops w (it may already have been cut).
func (h *Hub) Unsubscribe(w *Watcher) {
	h.mu.Lock()
	delete(h.subs, w)
	h.mu.Unlock()
}

// Current returns the newest revision the hub has seen.
func (h *Hub) Current() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Oldest returns the oldest revision a watch can start from.
func (h *Hub) Oldest() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.base + 1
}

// Watchers returns the number of open watchers.
func (h *Hub) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Closed reports whether Close has been called: the controller is
// stopping.
func (h *Hub) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
