package procpace

import "sync"

// Holds lets other parts of the process ask for all Ps for a while,
// whatever the load. debug.FreeOSMemory is the reason: after its
// collection the runtime returns the free pages to the system on the
// system stack, where nothing can preempt it, so on one P the whole
// process waited for it. Releasing a burst's garbage (roles/gcpace) held
// every controller for up to a second, and a leader that misses its
// heartbeats that long is replaced (docs/PERFORMANCE.md, "Stalls after a
// burst"). With all Ps the other goroutines run beside it.
//
// The zero value is ready; Run raises the Ps at once on a Hold.
type Holds struct {
	mu    sync.Mutex
	n     int
	raise func() // set while Run runs; called with mu held
}

// Hold gives the process all Ps (at once, if the pacer runs) until the
// returned release is called; release is idempotent.
func (h *Holds) Hold() (release func()) {
	h.mu.Lock()
	h.n++
	if h.raise != nil {
		h.raise()
	}
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			h.n--
			h.mu.Unlock()
		})
	}
}
