package watch

import (
	"sync"

	"github.com/corral-dev/corral/metadata"
)

// Registry holds every watch of one server. Safe for concurrent use.
type Registry struct {
	mu  sync.RWMutex
	max int
}

// NewRegistry returns an empty registry that lets each connection hold at
// most maxPerConn watches (maxPerConn <= 0: no limit).
func NewRegistry(maxPerConn int) *Registry {
	return &Registry{max: maxPerConn}
}

// Add registers watch k of connection c on path. It is idempotent: the same
// (c, path, k) twice is one watch and counts once, as ZooKeeper keeps a set
// per path. It returns ErrTooMany when c already holds its limit.
func (r *Registry) Add(c ConnID, path string, k Kind) error { return nil }

// Trigger returns the deliveries an applied znode change causes, and
// removes the one-shot watches that fired. Deliveries are sorted by
// connection, then event type, then path.
func (r *Registry) Trigger(ev metadata.ZNodeEvent) []Delivery { return nil }

// Remove implements removeWatches: it removes c's watches on path of
// WatcherType wt and reports whether anything was removed.
func (r *Registry) Remove(c ConnID, path string, wt int32) bool { return false }

// Check implements checkWatches: it reports whether Remove(c, path, wt)
// would remove something, without removing it.
func (r *Registry) Check(c ConnID, path string, wt int32) bool { return false }

// DropConn forgets all watches of a closed connection.
func (r *Registry) DropConn(c ConnID) {}

// Count returns the total number of registered watches (for the metric
// and the 4lw "wchs"-style output).
func (r *Registry) Count() int { return 0 }

// CountConn returns the number of watches connection c holds.
func (r *Registry) CountConn(c ConnID) int { return 0 }

// Paths returns the number of distinct watched paths.
func (r *Registry) Paths() int { return 0 }
