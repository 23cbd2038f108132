package raftlog

import (
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The bootstrap point. raft's bootstrap.go recommends, instead of StartNode,
// "a Storage that has a first index > 1 and which stores the desired
// ConfState as its InitialState". Bootstrap therefore writes what a node
// would hold after applying a snapshot at index 1, term 1 containing only the
// membership: every bootstrapped node starts with identical logs (the dummy
// entry {1,1}), so raft's log-matching check succeeds at index 1 and the
// first leader simply appends from index 2. Because the snapshot is
// non-empty, a leader can also send it to a node that has nothing.
const (
	bootstrapIndex = 1
	bootstrapTerm  = 1
)

// Bootstrap prepares a brand-new store for raft.RestartNode with the given
// voters: it writes (synced) a snapshot at index 1, term 1 whose metadata
// holds ConfState{Voters: voters} and whose Data is EMPTY, the matching
// truncated state, and HardState{Term: 1, Commit: 1}. Afterwards
// FirstIndex()=2, LastIndex()=1, Term(1)=1 and InitialState() returns the
// voters, so RestartNode starts with the membership already in place (no
// ConfChange entries to apply).
//
// The application must treat the empty Data of this snapshot (index 1) as
// its initial, empty state machine, e.g. when a joining node receives it via
// MsgSnap. All founding members must be bootstrapped with the same voters.
// Bootstrap fails if the store is not empty (see IsEmpty) or voters is
// empty, contains 0 or duplicates.
func (s *Store) Bootstrap(voters []uint64) error {
	if len(voters) == 0 {
		return errors.New("bootstrap raft log: no voters")
	}
	vs := slices.Clone(voters)
	slices.Sort(vs)
	for k, v := range vs {
		if v == 0 {
			return errors.New("bootstrap raft log: voter id 0 is reserved (raft.None)")
		}
		if k > 0 && vs[k-1] == v {
			return fmt.Errorf("bootstrap raft log: duplicate voter %d", v)
		}
	}

	s.snapMu.Lock() // writes a snapshot file; snapMu comes before wmu
	defer s.snapMu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if !isEmptyState(&s.st) {
		return fmt.Errorf("bootstrap raft log %s: store is not empty (last index %d, snapshot %d, term %d)",
			s.opts.Dir, s.st.last, s.st.snap.GetIndex(), s.st.hs.GetTerm())
	}

	st := s.st
	cs := pb.EnsureConfState(&pb.ConfState{Voters: vs})
	st.snap = pb.EnsureSnapshotMetadata(&pb.SnapshotMetadata{
		Index: new(uint64(bootstrapIndex)), Term: new(uint64(bootstrapTerm)), ConfState: cs,
	})
	st.cs = cloneConfState(cs)
	st.trunc = truncState{index: bootstrapIndex, term: bootstrapTerm}
	st.last = bootstrapIndex
	st.hs = &pb.HardState{Term: new(uint64(bootstrapTerm)), Vote: new(uint64(0)), Commit: new(uint64(bootstrapIndex))}

	// Every snapshot has a data file, the empty one included, so that Open
	// can tell a lost file from a snapshot without data.
	ref, err := s.writeSnapFile(bootstrapIndex, bootstrapTerm, nil)
	if err != nil {
		return fmt.Errorf("bootstrap raft log: %w", err)
	}
	st.snapFile = ref
	commitTried := false
	defer func() {
		if !commitTried {
			s.removeFile(ref.name)
		}
	}()
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := putSnapshot(b, st.snap, ref); err != nil {
		return err
	}
	if err := b.Set(keyTrunc, encodeTrunc(st.trunc), nil); err != nil {
		return fmt.Errorf("bootstrap raft log: %w", err)
	}
	hsVal, err := encodeProtoRecord(keyHardState, st.hs)
	if err != nil {
		return err
	}
	if err := b.Set(keyHardState, hsVal, nil); err != nil {
		return fmt.Errorf("bootstrap raft log: %w", err)
	}
	commitTried = true
	if err := s.commit(b, true, func() { s.st = st; s.cache.reset() }); err != nil {
		return fmt.Errorf("bootstrap raft log: %w", err)
	}
	s.log.Info("bootstrapped raft log", "voters", vs)
	return nil
}

// IsEmpty reports whether the store holds no raft state at all: no
// HardState, no entries, no snapshot and no ConfState. Node metadata
// (GetMeta/SetMeta) does not count. A controller uses it to decide between
// Bootstrap (founding member), waiting for a snapshot (joining member) and a
// plain restart.
func (s *Store) IsEmpty() (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usableLocked(); err != nil {
		return false, err
	}
	return isEmptyState(&s.st), nil
}

func isEmptyState(st *state) bool {
	cs := st.cs
	return raft.IsEmptyHardState(st.hs) && st.last == 0 && st.trunc.index == 0 && st.snap.GetIndex() == 0 &&
		len(cs.GetVoters()) == 0 && len(cs.GetLearners()) == 0 &&
		len(cs.GetVotersOutgoing()) == 0 && len(cs.GetLearnersNext()) == 0
}
