package raftlog

import (
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Save persists one raft Ready in ONE Pebble batch, in this order:
//
//  1. snap, if !raft.IsEmptySnap(snap): its metadata, data and ConfState
//     are stored, the truncated state is reset to it and the whole log is
//     dropped (MemoryStorage.ApplySnapshot). raft.ErrSnapOutOfDate if it is
//     not newer than the current snapshot.
//  2. ents: entries already covered by the truncated state are skipped; an
//     entry with index i replaces any stored entries >= i (the conflicting
//     or stale tail is deleted), as MemoryStorage.Append.
//  3. hs, if !raft.IsEmptyHardState(hs).
//
// One batch means a crash persists all of it or none of it; in particular a
// HardState whose commit index covers entries is never durable without them.
// The batch is synced iff sync; pass rd.MustSync || !raft.IsEmptySnap(rd.Snapshot).
//
// Where MemoryStorage would panic (entries leaving a gap after the last
// index) Save returns an error and writes nothing. It also rejects
// non-contiguous entries, and any batch after which the HardState commit
// index (new or previously saved) would exceed the last index: raft never
// does that, and such a store would fail validation at Open.
//
// A snapshot's data is written to its own file (fsynced) before the batch,
// which then names it; this happens under the writers' lock, as the raft
// loop installing a snapshot has nothing else to do meanwhile. It also waits
// for a CreateSnapshot that is writing its file (snapMu).
func (s *Store) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot, sync bool) error {
	if raft.IsEmptySnap(snap) {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		_, err := s.save(hs, ents, snap, sync, false)
		return err
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	ref, err := s.saveWithSnap(hs, ents, snap, sync)
	if err != nil {
		return err
	}
	// Outside wmu: removal may wait for a Snapshot() reading an old file.
	s.removeSnapFiles(ref.name)
	return nil
}

// saveWithSnap is Save's part under wmu for a Ready carrying a snapshot.
func (s *Store) saveWithSnap(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot, sync bool) (*snapRef, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.save(hs, ents, snap, sync, true)
}

// save does Save's work with wmu (and, if hasSnap, snapMu) held. It returns
// the new snapshot's file, if any.
func (s *Store) save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot, sync, hasSnap bool) (*snapRef, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	st := s.st // writers hold wmu, so st cannot change under us
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()

	var ref *snapRef
	commitTried := false
	if hasSnap {
		meta := pb.EnsureSnapshotMetadata(proto.Clone(snap.GetMetadata()).(*pb.SnapshotMetadata))
		if meta.GetIndex() <= st.snap.GetIndex() {
			return nil, fmt.Errorf("save snapshot at %d (have %d): %w", meta.GetIndex(), st.snap.GetIndex(), raft.ErrSnapOutOfDate)
		}
		var err error
		if ref, err = s.writeSnapFile(meta.GetIndex(), meta.GetTerm(), snap.GetData()); err != nil {
			return nil, fmt.Errorf("save snapshot at %d: %w", meta.GetIndex(), err)
		}
		defer func() {
			// A batch rejected before its commit leaves the file unnamed:
			// drop it. Once a commit was tried (even a failed one, after
			// which it is unknown whether the batch is durable) keep it;
			// Open removes it if the metadata does not name it.
			if !commitTried {
				s.removeFile(ref.name)
			}
		}()
		if err := putSnapshot(b, meta, ref); err != nil {
			return nil, err
		}
		st.trunc = truncState{index: meta.GetIndex(), term: meta.GetTerm()}
		if err := b.Set(keyTrunc, encodeTrunc(st.trunc), nil); err != nil {
			return nil, fmt.Errorf("save snapshot: %w", err)
		}
		if err := b.DeleteRange(logPrefix, logPrefixEnd, nil); err != nil {
			return nil, fmt.Errorf("save snapshot: drop log: %w", err)
		}
		st.last = st.trunc.index
		st.snap = meta
		st.cs = cloneConfState(meta.GetConfState())
		st.snapFile = ref
	}

	kept, err := appendEntries(b, &st, ents)
	if err != nil {
		return nil, err
	}

	if !raft.IsEmptyHardState(hs) {
		hs = proto.Clone(hs).(*pb.HardState)
		val, err := encodeProtoRecord(keyHardState, hs)
		if err != nil {
			return nil, err
		}
		if err := b.Set(keyHardState, val, nil); err != nil {
			return nil, fmt.Errorf("save hard state: %w", err)
		}
		st.hs = hs
	}

	// Raft never truncates committed entries nor commits beyond its log;
	// refusing such a batch keeps the store from persisting a state that Open
	// would reject (a commit index pointing past the last entry).
	if c := st.hs.GetCommit(); c > st.last {
		return nil, fmt.Errorf("save: hard state commit %d would be beyond last index %d", c, st.last)
	}
	if b.Empty() {
		return nil, nil
	}
	commitTried = true
	return ref, s.commit(b, sync, func() {
		s.st = st
		if hasSnap {
			s.cache.reset()
		}
		s.cache.append(kept)
	})
}

// appendEntries adds ents to b with MemoryStorage.Append's semantics and
// updates st.last. It returns the entries actually written.
func appendEntries(b batchWriter, st *state, ents []*pb.Entry) ([]*pb.Entry, error) {
	if len(ents) == 0 {
		return nil, nil
	}
	for k := 1; k < len(ents); k++ {
		if ents[k].GetIndex() != ents[k-1].GetIndex()+1 {
			return nil, fmt.Errorf("save entries: index %d follows %d (entries must be contiguous)",
				ents[k].GetIndex(), ents[k-1].GetIndex())
		}
	}
	first := st.trunc.index + 1
	newLast := ents[0].GetIndex() + uint64(len(ents)) - 1
	if newLast < first {
		return nil, nil // everything is already covered by the truncated state
	}
	if ents[0].GetIndex() < first {
		ents = ents[first-ents[0].GetIndex():]
	}
	if ents[0].GetIndex() > st.last+1 {
		return nil, fmt.Errorf("save entries: first index %d leaves a gap after last index %d",
			ents[0].GetIndex(), st.last)
	}
	var val []byte // reused: Set copies key and value into the batch
	for _, e := range ents {
		key := logKey(e.GetIndex())
		var err error
		if val, err = appendProtoRecord(val, key, e); err != nil {
			return nil, err
		}
		if err := b.Set(key, val, nil); err != nil {
			return nil, fmt.Errorf("save entry %d: %w", e.GetIndex(), err)
		}
	}
	if newLast < st.last {
		// A conflicting suffix replaced a longer tail: drop what follows it.
		if err := b.DeleteRange(logKey(newLast+1), logKey(st.last+1), nil); err != nil {
			return nil, fmt.Errorf("save entries: delete stale tail %d..%d: %w", newLast+1, st.last, err)
		}
	}
	st.last = newLast
	return ents, nil
}
