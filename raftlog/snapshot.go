package raftlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// batchWriter is the subset of *pebble.Batch the write helpers use.
type batchWriter interface {
	Set(key, value []byte, o *pebble.WriteOptions) error
	Delete(key []byte, o *pebble.WriteOptions) error
	DeleteRange(start, end []byte, o *pebble.WriteOptions) error
}

// putSnapshot stores snapshot metadata, the record naming its (already
// written) data file, and its ConfState. The ConfState is also written to
// r/cs because InitialState must return the newest ConfState, which is the
// snapshot's right after it is taken/applied. An inline blob left by an
// earlier version under keySnapData is deleted in the same batch, so the
// store has moved to files once the batch is durable.
func putSnapshot(b batchWriter, meta *pb.SnapshotMetadata, ref *snapRef) error {
	val, err := encodeProtoRecord(keySnapMeta, meta)
	if err != nil {
		return err
	}
	if err := b.Set(keySnapMeta, val, nil); err != nil {
		return fmt.Errorf("save snapshot metadata: %w", err)
	}
	if err := b.Set(keySnapFile, encodeSnapRef(ref), nil); err != nil {
		return fmt.Errorf("save snapshot file record: %w", err)
	}
	if err := b.Delete(keySnapData, nil); err != nil {
		return fmt.Errorf("delete inline snapshot data: %w", err)
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
//
// The data goes to its own file, written and fsynced WITHOUT the writers'
// lock: only the small metadata batch is committed under wmu, so the raft
// loop's Save does not wait for a large snapshot's write.
func (s *Store) CreateSnapshot(i uint64, cs *pb.ConfState, data []byte) (*pb.Snapshot, error) {
	meta, err := s.CreateSnapshotFrom(i, cs, int64(len(data)), func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &pb.Snapshot{Metadata: meta, Data: data}, nil
}

// CreateSnapshotFrom is CreateSnapshot with the data written by write,
// which must write exactly size bytes, straight into the snapshot's file:
// a controller streams its state there rather than encode hundreds of
// megabytes into memory first (PERFORMANCE.md, "A million keys"). write
// runs once, unless a check fails first; its error is returned wrapped.
func (s *Store) CreateSnapshotFrom(i uint64, cs *pb.ConfState, size int64, write func(io.Writer) error) (*pb.SnapshotMetadata, error) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()

	// Cheap pre-check so that an out-of-date request writes no file. With
	// snapMu held no other snapshot can be installed meanwhile, but the
	// checks are repeated under wmu anyway: they are what the batch relies on.
	s.mu.RLock()
	err := s.usableLocked()
	st := s.st
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := checkSnapshotAt(i, &st); err != nil {
		return nil, err
	}
	term, err := s.Term(i)
	if err != nil {
		return nil, fmt.Errorf("create snapshot at %d: %w", i, err)
	}

	ref, err := s.writeSnapFileFrom(i, term, size, write)
	if err != nil {
		return nil, fmt.Errorf("create snapshot at %d: %w", i, err)
	}
	if s.testHookSnapWritten != nil {
		s.testHookSnapWritten()
	}

	meta, committed, err := s.commitSnapshot(i, term, cs, ref)
	if err != nil {
		if !committed {
			// The metadata never named the file: drop it now rather than
			// leave it for the next Open.
			s.removeFile(ref.name)
		}
		return nil, err
	}
	s.removeSnapFiles(ref.name)
	return proto.Clone(meta).(*pb.SnapshotMetadata), nil
}

// checkSnapshotAt checks that a snapshot at i may be created on st.
func checkSnapshotAt(i uint64, st *state) error {
	if i <= st.snap.GetIndex() {
		return fmt.Errorf("create snapshot at %d (have %d): %w", i, st.snap.GetIndex(), raft.ErrSnapOutOfDate)
	}
	if i > st.last {
		return fmt.Errorf("create snapshot at %d: beyond last index %d: %w", i, st.last, raft.ErrUnavailable)
	}
	return nil
}

// commitSnapshot is CreateSnapshot's part under wmu: re-check, commit the
// metadata naming ref (synced) and publish it. committed is false when the
// batch was certainly not applied; after a failed commit it is unknown, and
// reported as true so the caller keeps the file the metadata may name.
func (s *Store) commitSnapshot(i, term uint64, cs *pb.ConfState, ref *snapRef) (_ *pb.SnapshotMetadata, committed bool, _ error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.usable(); err != nil {
		return nil, false, err
	}
	st := s.st
	if err := checkSnapshotAt(i, &st); err != nil {
		return nil, false, err
	}
	t, err := s.termAt(i)
	if err != nil {
		return nil, false, fmt.Errorf("create snapshot at %d: %w", i, err)
	}
	if t != term {
		// Only possible if an uncommitted entry i was replaced while the file
		// was written; the application snapshots applied entries only.
		return nil, false, fmt.Errorf("create snapshot at %d: entry %d changed term from %d to %d while the snapshot was written",
			i, i, term, t)
	}
	if cs == nil {
		cs = st.cs
	}
	meta := &pb.SnapshotMetadata{Index: new(i), Term: new(term), ConfState: cloneConfState(cs)}
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := putSnapshot(b, meta, ref); err != nil {
		return nil, false, err
	}
	err = s.commit(b, true, func() {
		s.st.snap = meta
		s.st.cs = cloneConfState(meta.GetConfState())
		s.st.snapFile = ref
	})
	if err != nil {
		return nil, true, fmt.Errorf("create snapshot at %d: %w", i, err)
	}
	return meta, true, nil
}

// removeFile deletes a snapshot file that no metadata names.
func (s *Store) removeFile(name string) {
	if err := os.Remove(filepath.Join(s.snapDir(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot remove unused snapshot file", "file", name, "err", err)
	}
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
