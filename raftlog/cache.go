package raftlog

import (
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// entryOverhead approximates the heap cost of a cached entry beyond its
// encoded size (the Entry struct, its optional-field pointers and the slot in
// the cache), so that many tiny entries are still bounded sensibly.
const entryOverhead = 96

// cachedEntry is an entry with its encoded size, computed once because
// Entries' maxSize accounting needs it on every read.
type cachedEntry struct {
	e    *pb.Entry
	size uint64 // proto.Size(e)
}

// tailCache holds the newest entries of the log, contiguous and always ending
// at the log's last index, bounded by bytes. Raft reads almost only the tail
// (replication to followers, committed entries to apply), so this keeps the
// hot path off Pebble. Older entries are read from disk.
//
// Cached entries are shared with callers of Entries and must never be
// mutated (the raft.Storage contract makes entries immutable).
//
// tailCache is not synchronised; Store guards it with its locks.
type tailCache struct {
	max   uint64
	ents  []cachedEntry // ents[k].e.Index == ents[0].e.Index + k
	bytes uint64
}

func newTailCache(maxBytes uint64) tailCache {
	return tailCache{max: maxBytes}
}

// first returns the index of the oldest cached entry, ok=false if empty.
func (c *tailCache) first() (uint64, bool) {
	if len(c.ents) == 0 {
		return 0, false
	}
	return c.ents[0].e.GetIndex(), true
}

// covers reports whether every index in [lo, hi) is cached. The cache always
// ends at the log's last index, so only the lower end needs checking.
func (c *tailCache) covers(lo uint64) bool {
	f, ok := c.first()
	return ok && lo >= f
}

// get returns the cached entry at index i.
func (c *tailCache) get(i uint64) (cachedEntry, bool) {
	f, ok := c.first()
	if !ok || i < f || i-f >= uint64(len(c.ents)) {
		return cachedEntry{}, false
	}
	return c.ents[i-f], true
}

// append adds the contiguous entries ents, discarding any cached entries at
// or after ents[0].Index (they were overwritten by a conflicting suffix).
// If ents does not continue the cached range the cache restarts at ents.
func (c *tailCache) append(ents []*pb.Entry) {
	if len(ents) == 0 {
		return
	}
	start := ents[0].GetIndex()
	if f, ok := c.first(); ok {
		if start < f || start > f+uint64(len(c.ents)) {
			c.reset()
		} else {
			c.truncateFrom(start)
		}
	}
	for _, e := range ents {
		sz := uint64(proto.Size(e))
		c.ents = append(c.ents, cachedEntry{e: e, size: sz})
		c.bytes += sz + entryOverhead
	}
	c.evict()
}

// truncateFrom drops cached entries with index >= i.
func (c *tailCache) truncateFrom(i uint64) {
	f, ok := c.first()
	if !ok || i >= f+uint64(len(c.ents)) {
		return
	}
	if i < f {
		i = f
	}
	for k := i - f; k < uint64(len(c.ents)); k++ {
		c.bytes -= c.ents[k].size + entryOverhead
		c.ents[k] = cachedEntry{} // drop the reference for the GC
	}
	c.ents = c.ents[:i-f]
}

// compactTo drops cached entries with index <= i.
func (c *tailCache) compactTo(i uint64) {
	f, ok := c.first()
	if !ok || i < f {
		return
	}
	n := min(i-f+1, uint64(len(c.ents)))
	c.dropFront(int(n))
}

// evict drops the oldest entries until the cache fits its byte bound.
func (c *tailCache) evict() {
	n := 0
	b := c.bytes
	for n < len(c.ents) && b > c.max {
		b -= c.ents[n].size + entryOverhead
		n++
	}
	c.dropFront(n)
}

func (c *tailCache) dropFront(n int) {
	if n == 0 {
		return
	}
	for k := 0; k < n; k++ {
		c.bytes -= c.ents[k].size + entryOverhead
		c.ents[k] = cachedEntry{}
	}
	if n == len(c.ents) {
		c.ents = nil
		return
	}
	c.ents = c.ents[n:]
}

func (c *tailCache) reset() {
	c.ents = nil
	c.bytes = 0
}
