package raftlog

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Read side of raft.Storage. Every method first tries to answer from memory
// (state + tail cache) under mu alone; only if Pebble must be read does it
// take commitMu shared and retry, so cache hits never wait for a commit's
// fsync and disk reads never observe a half-published commit.

// InitialState implements raft.Storage. The HardState is nil until one has
// been saved; the ConfState is the one last persisted by Save (snapshot),
// CreateSnapshot, SetConfState or Bootstrap, never nil. Both are copies.
func (s *Store) InitialState() (*pb.HardState, *pb.ConfState, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usableLocked(); err != nil {
		return nil, nil, err
	}
	var hs *pb.HardState
	if s.st.hs != nil {
		hs = proto.Clone(s.st.hs).(*pb.HardState)
	}
	return hs, cloneConfState(s.st.cs), nil
}

// FirstIndex implements raft.Storage: the index after the truncated state.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usableLocked(); err != nil {
		return 0, err
	}
	return s.st.trunc.index + 1, nil
}

// LastIndex implements raft.Storage.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usableLocked(); err != nil {
		return 0, err
	}
	return s.st.last, nil
}

// Entries implements raft.Storage with MemoryStorage's semantics:
// raft.ErrCompacted if lo <= the truncated index, raft.ErrUnavailable if the
// log holds no entries, at least one entry even if it exceeds maxSize, and a
// freshly allocated slice. Where MemoryStorage panics (hi > LastIndex()+1,
// lo > hi) it returns an error instead (wrapping raft.ErrUnavailable).
func (s *Store) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	s.mu.RLock()
	ents, needDisk, err := s.entriesLocked(lo, hi, maxSize, false)
	s.mu.RUnlock()
	if !needDisk {
		return ents, err
	}
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	ents, _, err = s.entriesLocked(lo, hi, maxSize, true)
	return ents, err
}

// entriesLocked serves Entries from the cache and, if disk is set, Pebble.
// With disk unset it reports needDisk instead of reading Pebble.
func (s *Store) entriesLocked(lo, hi, maxSize uint64, disk bool) (_ []*pb.Entry, needDisk bool, _ error) {
	if err := s.usableLocked(); err != nil {
		return nil, false, err
	}
	st := &s.st
	if lo <= st.trunc.index {
		return nil, false, raft.ErrCompacted
	}
	if hi > st.last+1 {
		return nil, false, fmt.Errorf("entries [%d, %d): beyond last index %d: %w", lo, hi, st.last, raft.ErrUnavailable)
	}
	if st.last == st.trunc.index {
		return nil, false, raft.ErrUnavailable
	}
	if lo > hi {
		return nil, false, fmt.Errorf("entries [%d, %d): inverted range: %w", lo, hi, raft.ErrUnavailable)
	}
	if lo < hi && !s.cache.covers(lo) && !disk {
		return nil, true, nil
	}

	// The caller owns (and may append to) the result: always a new slice.
	out := make([]*pb.Entry, 0, min(hi-lo, 256))
	var size uint64
	add := func(e *pb.Entry, sz uint64) bool {
		if len(out) > 0 && size+sz > maxSize {
			return false
		}
		size += sz
		out = append(out, e)
		return true
	}
	next := lo
	if lo < hi && !s.cache.covers(lo) {
		end := hi
		if f, ok := s.cache.first(); ok && f < end {
			end = f
		}
		full, err := s.readRange(lo, end, st.last, add)
		if err != nil || full {
			return out, false, err
		}
		next = end
	}
	for ; next < hi; next++ {
		ce, ok := s.cache.get(next)
		if !ok {
			// The cache always ends at last, so this is a bug, not damage.
			return nil, false, fmt.Errorf("entries: index %d neither on disk range nor in cache", next)
		}
		if !add(ce.e, ce.size) {
			break
		}
	}
	return out, false, nil
}

// readRange visits the entries [lo, hi) from Pebble in order until visit
// returns false (then full is true). A missing entry is corruption: every
// index in (trunc, last] must exist. The caller holds commitMu shared or wmu.
func (s *Store) readRange(lo, hi, last uint64, visit func(*pb.Entry, uint64) bool) (full bool, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logKey(lo), UpperBound: logKey(hi)})
	if err != nil {
		return false, pebbleErr("read log", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = pebbleErr("read log", cerr)
		}
	}()
	next := lo
	for valid := it.First(); valid; valid = it.Next() {
		key := it.Key()
		idx, err := parseLogKey(key)
		if err != nil {
			return false, err
		}
		if idx != next {
			return false, fmt.Errorf("%w: log entry %d is missing (last index %d)", ErrCorrupt, next, last)
		}
		// The iterator's value is only valid until Next; decode a copy.
		e, err := decodeEntryRecord(key, slices.Clone(it.Value()))
		if err != nil {
			return false, err
		}
		next++
		if !visit(e, uint64(proto.Size(e))) {
			return true, nil
		}
	}
	if err := it.Error(); err != nil {
		return false, pebbleErr("read log", err)
	}
	if next < hi {
		return false, fmt.Errorf("%w: log entry %d is missing (last index %d)", ErrCorrupt, next, last)
	}
	return false, nil
}

// Term implements raft.Storage: the term of entry i for i in
// [FirstIndex()-1, LastIndex()], raft.ErrCompacted below that range and
// raft.ErrUnavailable above it.
func (s *Store) Term(i uint64) (uint64, error) {
	s.mu.RLock()
	t, needDisk, err := s.termLocked(i)
	s.mu.RUnlock()
	if !needDisk {
		return t, err
	}
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t, needDisk, err = s.termLocked(i); !needDisk {
		return t, err
	}
	e, err := s.readEntry(i)
	return e.GetTerm(), err
}

// termLocked answers Term from memory, or reports needDisk. The caller holds
// mu, or wmu (writers are the only mutators).
func (s *Store) termLocked(i uint64) (_ uint64, needDisk bool, _ error) {
	if err := s.usableLocked(); err != nil {
		return 0, false, err
	}
	switch {
	case i < s.st.trunc.index:
		return 0, false, raft.ErrCompacted
	case i == s.st.trunc.index:
		return s.st.trunc.term, false, nil
	case i > s.st.last:
		return 0, false, raft.ErrUnavailable
	}
	if ce, ok := s.cache.get(i); ok {
		return ce.e.GetTerm(), false, nil
	}
	return 0, true, nil
}

// termAt is Term for writers holding wmu (no commit can run concurrently).
func (s *Store) termAt(i uint64) (uint64, error) {
	t, needDisk, err := s.termLocked(i)
	if !needDisk {
		return t, err
	}
	e, err := s.readEntry(i)
	return e.GetTerm(), err
}

// readEntry reads log entry i, which must exist, from Pebble.
func (s *Store) readEntry(i uint64) (*pb.Entry, error) {
	key := logKey(i)
	val, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("%w: log entry %d is missing (last index %d)", ErrCorrupt, i, s.st.last)
	}
	if err != nil {
		return nil, pebbleErr(fmt.Sprintf("read log entry %d", i), err)
	}
	val = slices.Clone(val) // only valid until closer.Close()
	if err := closer.Close(); err != nil {
		return nil, pebbleErr(fmt.Sprintf("read log entry %d", i), err)
	}
	return decodeEntryRecord(key, val)
}

// Snapshot implements raft.Storage: the latest snapshot (metadata and state
// machine data), or an empty snapshot if there is none. Never
// raft.ErrSnapshotTemporarilyUnavailable: snapshots are stored whole.
//
// The data file is read without commitMu or mu, so commits do not wait for
// it. Consistency with a concurrent CreateSnapshot: the (metadata, file)
// pair is taken together under mu, and filesMu is held shared from before
// that until the file is read. Stale files are removed only under filesMu
// exclusively, after the newer metadata is published, so the file a reader
// picked cannot disappear under it, while a newer snapshot can still be
// committed meanwhile.
//
// The first call after Open returns the data Open verified, which on Linux
// is the file mapped read-only and never unmapped, so that the caller may
// keep slices of it for the life of the process. No caller may modify
// snapshot data: in that mapping a write faults.
func (s *Store) Snapshot() (*pb.Snapshot, error) {
	s.filesMu.RLock()
	defer s.filesMu.RUnlock()
	s.mu.Lock()
	err := s.usableLocked()
	meta, ref := s.st.snap, s.st.snapFile
	opened := s.opened
	s.opened = nil // one use
	s.mu.Unlock()
	if opened != nil {
		if err == nil && ref != nil && opened.ref.name == ref.name {
			// Handed out for good: the caller may keep slices of it (the
			// controller's state does, see metadata.RestoreNoCopy).
			return snapshotOf(meta, opened.data), nil
		}
		opened.unmap() // a newer snapshot replaced it before anyone asked
	}
	if err != nil {
		return nil, err
	}
	if ref == nil {
		var data []byte
		var inline bool
		if meta, ref, data, inline, err = s.inlineSnapshot(); err != nil || inline {
			return snapshotOf(meta, data), err
		}
	}
	data, err := s.readSnapFile(ref)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	return snapshotOf(meta, data), nil
}

// inlineSnapshot reads a snapshot whose data is still inline in Pebble (a
// store written by an earlier version). commitMu keeps the metadata and the
// blob from one commit; if a snapshot file replaced the blob meanwhile, that
// file is returned instead (inline false).
func (s *Store) inlineSnapshot() (meta *pb.SnapshotMetadata, ref *snapRef, data []byte, inline bool, err error) {
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usableLocked(); err != nil {
		return nil, nil, nil, false, err
	}
	if s.st.snapFile != nil {
		return s.st.snap, s.st.snapFile, nil, false, nil
	}
	data, _, err = s.get(keySnapData)
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("read snapshot: %w", err)
	}
	return s.st.snap, nil, data, true, nil
}

// snapshotOf pairs a copy of meta with data; nil meta means an error.
func snapshotOf(meta *pb.SnapshotMetadata, data []byte) *pb.Snapshot {
	if meta == nil {
		return nil
	}
	return pb.EnsureSnapshot(&pb.Snapshot{Metadata: proto.Clone(meta).(*pb.SnapshotMetadata), Data: data})
}

// cloneConfState returns a deep copy of cs with all fields present (as
// MemoryStorage returns it), or an empty ConfState for nil.
func cloneConfState(cs *pb.ConfState) *pb.ConfState {
	if cs == nil {
		return pb.EnsureConfState(nil)
	}
	return pb.EnsureConfState(proto.Clone(cs).(*pb.ConfState))
}
