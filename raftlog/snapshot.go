package raftlog

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// batchWriter is the subset of *pebble.Batch the write helpers use.
type batchWriter interface {
	Set(key, value []byte, o *pebble.WriteOptions) error
	DeleteRange(start, end []byte, o *pebble.WriteOptions) error
}

// putSnapshot stores snapshot metadata, data and its ConfState. The
// ConfState is also written to r/cs because InitialState must return the
// newest ConfState, which is the snapshot's right after it is taken/applied.
func putSnapshot(b batchWriter, meta *pb.SnapshotMetadata, data []byte) error {
	val, err := encodeProtoRecord(keySnapMeta, meta)
	if err != nil {
		return err
	}
	if err := b.Set(keySnapMeta, val, nil); err != nil {
		return fmt.Errorf("save snapshot metadata: %w", err)
	}
	if err := b.Set(keySnapData, encodeRecord(keySnapData, data), nil); err != nil {
		return fmt.Errorf("save snapshot data: %w", err)
	}
	return putConfState(b, meta.GetConfState())
}

func putConfState(b batchWriter, cs *pb.ConfState) error {
	val, err := encodeProtoRecord(keyConfState, cs)
	if err != nil {
		return err
	}
	if err := b.Set(keyConfState, val, nil); err != nil {
		return fmt.Errorf("save conf state: %w", err)
	}
	return nil
}

// CreateSnapshot records a state-machine snapshot at applied index i with
// ConfState cs (nil keeps the latest persisted ConfState) and data, synced,
// and returns it. i must be > the current snapshot index (else
// raft.ErrSnapOutOfDate) and <= the last index (else an error wrapping
// raft.ErrUnavailable, where MemoryStorage panics). The log is not
// compacted; call Compact for that.
func (s *Store) CreateSnapshot(i uint64, cs *pb.ConfState, data []byte) (*pb.Snapshot, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	st := s.st
	if i <= st.snap.GetIndex() {
		return nil, fmt.Errorf("create snapshot at %d (have %d): %w", i, st.snap.GetIndex(), raft.ErrSnapOutOfDate)
	}
	if i > st.last {
		return nil, fmt.Errorf("create snapshot at %d: beyond last index %d: %w", i, st.last, raft.ErrUnavailable)
	}
	term, err := s.termAt(i)
	if err != nil {
		return nil, fmt.Errorf("create snapshot at %d: %w", i, err)
	}
	if cs == nil {
		cs = st.cs
	}
	meta := &pb.SnapshotMetadata{Index: new(i), Term: new(term), ConfState: cloneConfState(cs)}
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := putSnapshot(b, meta, data); err != nil {
		return nil, err
	}
	err = s.commit(b, true, func() {
		s.st.snap = meta
		s.st.cs = cloneConfState(meta.GetConfState())
	})
	if err != nil {
		return nil, fmt.Errorf("create snapshot at %d: %w", i, err)
	}
	return &pb.Snapshot{Metadata: proto.Clone(meta).(*pb.SnapshotMetadata), Data: data}, nil
}

// Compact discards the entries before i; entry i becomes the truncated state
// (the dummy whose term is kept), like MemoryStorage.Compact.
// raft.ErrCompacted if i <= FirstIndex()-1. Unlike MemoryStorage, i must also
// be <= the latest snapshot index: compacting past the snapshot would leave a
// restarted node (and any follower sent that snapshot) without the entries
// between the snapshot and the log. The batch is not synced: losing a
// compaction in a crash only leaves extra, still valid, entries.
func (s *Store) Compact(i uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	st := s.st
	if i <= st.trunc.index {
		return raft.ErrCompacted
	}
	if i > st.last {
		return fmt.Errorf("compact to %d: beyond last index %d: %w", i, st.last, raft.ErrUnavailable)
	}
	if i > st.snap.GetIndex() {
		return fmt.Errorf("compact to %d: beyond snapshot index %d; create a snapshot first", i, st.snap.GetIndex())
	}
	term, err := s.termAt(i)
	if err != nil {
		return fmt.Errorf("compact to %d: %w", i, err)
	}
	trunc := truncState{index: i, term: term}
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := b.DeleteRange(logPrefix, logKey(i+1), nil); err != nil {
		return fmt.Errorf("compact to %d: %w", i, err)
	}
	if err := b.Set(keyTrunc, encodeTrunc(trunc), nil); err != nil {
		return fmt.Errorf("compact to %d: %w", i, err)
	}
	return s.commit(b, false, func() {
		s.st.trunc = trunc
		s.cache.compactTo(i)
	})
}

// SetConfState persists cs as the latest ConfState (synced), so that
// InitialState returns it after a restart. The controller calls it after
// every ApplyConfChange.
func (s *Store) SetConfState(cs *pb.ConfState) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	cs = cloneConfState(cs)
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := putConfState(b, cs); err != nil {
		return err
	}
	return s.commit(b, true, func() { s.st.cs = cs })
}
