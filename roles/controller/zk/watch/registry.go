package watch

import (
	"math/bits"
	"strings"
	"sync"
)

// kindBits is a set of Kinds, bit k-1 for Kind k: a connection's watches
// on one path fit in one byte.
type kindBits uint8

func bit(k Kind) kindBits { return 1 << (k - 1) }

const allKinds = kindBits(1<<PersistentRecursive - 1)

// pathWatches are the watches on one path, one set of connections per
// kind (index Kind-1), each allocated on first use: most paths carry one
// or two kinds.
type pathWatches struct {
	// path is the one copy of the path string that both indexes share.
	path  string
	conns [PersistentRecursive]map[ConnID]struct{}
	n     int
}

// connWatches are one connection's watches, by path, for DropConn,
// CountConn, Remove and the per-connection limit.
type connWatches struct {
	paths map[string]kindBits
	n     int
}

// Registry holds every watch of one server. Safe for concurrent use.
//
// Two indexes hold the same watches: byPath answers Trigger in the size of
// its answer; byConn answers DropConn and the limit in the size of one
// connection's watches.
type Registry struct {
	mu     sync.RWMutex
	max    int
	byPath map[string]*pathWatches
	byConn map[ConnID]*connWatches
	total  int
	// recursive counts PersistentRecursive watches, so Trigger walks a
	// path's ancestors only when one might match.
	recursive int
}

// NewRegistry returns an empty registry that lets each connection hold at
// most maxPerConn watches (maxPerConn <= 0: no limit).
func NewRegistry(maxPerConn int) *Registry {
	return &Registry{
		max:    maxPerConn,
		byPath: make(map[string]*pathWatches),
		byConn: make(map[ConnID]*connWatches),
	}
}

// Add registers watch k of connection c on path. It is idempotent: the same
// (c, path, k) twice is one watch and counts once, as ZooKeeper keeps a set
// per path. It returns ErrTooMany when c already holds its limit.
func (r *Registry) Add(c ConnID, path string, k Kind) error {
	if k < Data || k > PersistentRecursive {
		return errKind
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.add(c, path, k)
}

// add is Add with r.mu held.
func (r *Registry) add(c ConnID, path string, k Kind) error {
	cw := r.byConn[c]
	if cw != nil && cw.paths[path]&bit(k) != 0 {
		return nil
	}
	if r.max > 0 && cw != nil && cw.n >= r.max {
		return ErrTooMany
	}
	pw := r.byPath[path]
	if pw == nil {
		// Clone: the caller's path may be a slice of a large request
		// buffer that a long-lived watch must not pin.
		p := strings.Clone(path)
		pw = &pathWatches{path: p}
		r.byPath[p] = pw
	}
	set := pw.conns[k-1]
	if set == nil {
		set = make(map[ConnID]struct{}, 1)
		pw.conns[k-1] = set
	}
	set[c] = struct{}{}
	pw.n++
	if cw == nil {
		cw = &connWatches{paths: make(map[string]kindBits, 1)}
		r.byConn[c] = cw
	}
	cw.paths[pw.path] |= bit(k)
	cw.n++
	r.total++
	if k == PersistentRecursive {
		r.recursive++
	}
	return nil
}

// del removes the kinds ks of connection c on path, and reports whether
// any was there. r.mu must be held.
func (r *Registry) del(c ConnID, path string, ks kindBits) bool {
	cw := r.byConn[c]
	if cw == nil {
		return false
	}
	have := cw.paths[path] & ks
	if have == 0 {
		return false
	}
	if left := cw.paths[path] &^ have; left != 0 {
		cw.paths[path] = left
	} else {
		delete(cw.paths, path)
	}
	n := bits.OnesCount8(uint8(have))
	cw.n -= n
	if cw.n == 0 {
		delete(r.byConn, c)
	}
	r.total -= n
	if have&bit(PersistentRecursive) != 0 {
		r.recursive--
	}
	pw := r.byPath[path]
	for k := Data; k <= PersistentRecursive; k++ {
		if have&bit(k) == 0 {
			continue
		}
		delete(pw.conns[k-1], c)
		if len(pw.conns[k-1]) == 0 {
			pw.conns[k-1] = nil
		}
	}
	pw.n -= n
	if pw.n == 0 {
		delete(r.byPath, path)
	}
	return true
}

// removeBits maps a WatcherType to the kinds removeWatches removes, as
// DataTree.removeWatch does: Data means the one-shot data watches (getData
// and exists), Any means everything. Unknown types remove nothing.
func removeBits(wt int32) kindBits {
	switch wt {
	case TypeChildren:
		return bit(Child)
	case TypeData:
		return bit(Data) | bit(Exist)
	case TypeAny:
		return allKinds
	case TypePersistent:
		return bit(Persistent)
	case TypePersistentRecursive:
		return bit(PersistentRecursive)
	}
	return 0
}

// Remove implements removeWatches: it removes c's watches on path of
// WatcherType wt and reports whether anything was removed.
func (r *Registry) Remove(c ConnID, path string, wt int32) bool {
	ks := removeBits(wt)
	if ks == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.del(c, path, ks)
}

// Check implements checkWatches: it reports whether Remove(c, path, wt)
// would remove something, without removing it.
func (r *Registry) Check(c ConnID, path string, wt int32) bool {
	ks := removeBits(wt)
	r.mu.RLock()
	defer r.mu.RUnlock()
	cw := r.byConn[c]
	return cw != nil && cw.paths[path]&ks != 0
}

// DropConn forgets all watches of a closed connection. It costs the number
// of watches c held.
func (r *Registry) DropConn(c ConnID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cw := r.byConn[c]
	if cw == nil {
		return
	}
	for path := range cw.paths {
		r.del(c, path, allKinds)
	}
}

// Count returns the total number of registered watches (for the metric
// and the 4lw "wchs"-style output).
func (r *Registry) Count() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.total
}

// CountConn returns the number of watches connection c holds.
func (r *Registry) CountConn(c ConnID) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if cw := r.byConn[c]; cw != nil {
		return cw.n
	}
	return 0
}

// Paths returns the number of distinct watched paths.
func (r *Registry) Paths() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byPath)
}
