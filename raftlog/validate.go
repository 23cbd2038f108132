package raftlog

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	pb "go.etcd.io/raft/v3/raftpb"
)

// load reads every piece of raft state, verifying each record, and fills
// s.st and the tail cache. Any inconsistency is an error wrapping ErrCorrupt:
// a raft node restarted on a damaged log would either panic later ("tocommit
// out of range ... Was the raft log corrupted") or, worse, vote and ack with
// state it does not have.
func (s *Store) load() error {
	st := state{}

	hs := new(pb.HardState)
	found, err := s.getProto(keyHardState, hs)
	if err != nil {
		return err
	}
	if found {
		st.hs = hs
	}

	payload, found, err := s.get(keyTrunc)
	if err != nil {
		return err
	}
	if found {
		if st.trunc, err = decodeTruncPayload(payload); err != nil {
			return err
		}
	}

	meta := new(pb.SnapshotMetadata)
	if _, err := s.getProto(keySnapMeta, meta); err != nil {
		return err
	}
	st.snap = pb.EnsureSnapshotMetadata(meta)

	cs := new(pb.ConfState)
	found, err = s.getProto(keyConfState, cs)
	if err != nil {
		return err
	}
	if !found {
		cs = cloneConfState(st.snap.GetConfState())
	}
	st.cs = pb.EnsureConfState(cs)

	// The snapshot blob is only read when raft sends a snapshot, which is
	// too late to discover it is damaged; verify its checksum now.
	if _, _, err := s.get(keySnapData); err != nil {
		return err
	}

	if err := s.verifyMeta(); err != nil {
		return err
	}

	if st.trunc.index > st.snap.GetIndex() {
		return fmt.Errorf("%w: truncated index %d is beyond snapshot index %d (entries the snapshot does not cover were discarded)",
			ErrCorrupt, st.trunc.index, st.snap.GetIndex())
	}

	if st.last, err = s.scanLog(st.trunc); err != nil {
		return err
	}
	if c := st.hs.GetCommit(); c > st.last {
		return fmt.Errorf("%w: hard state commit index %d is beyond last log index %d (acknowledged entries are missing)",
			ErrCorrupt, c, st.last)
	}
	s.st = st
	return nil
}

// scanLog verifies every log entry (checksum, index, contiguity from
// trunc.index+1, non-decreasing terms), warms the tail cache on the way, and
// returns the last index.
func (s *Store) scanLog(trunc truncState) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logPrefix, UpperBound: logPrefixEnd})
	if err != nil {
		return 0, pebbleErr("scan log", err)
	}
	next, prevTerm := trunc.index+1, trunc.term
	for valid := it.First(); valid; valid = it.Next() {
		idx, err := parseLogKey(it.Key())
		if err != nil {
			_ = it.Close()
			return 0, err
		}
		if idx != next {
			_ = it.Close()
			if idx < next {
				return 0, fmt.Errorf("%w: log entry %d survives below the truncated index %d", ErrCorrupt, idx, trunc.index)
			}
			return 0, fmt.Errorf("%w: log entries %d..%d are missing (log must be contiguous from %d)",
				ErrCorrupt, next, idx-1, trunc.index+1)
		}
		e, err := decodeEntryRecord(logKey(idx), slices.Clone(it.Value()))
		if err != nil {
			_ = it.Close()
			return 0, err
		}
		if e.GetTerm() < prevTerm {
			_ = it.Close()
			return 0, fmt.Errorf("%w: log entry %d has term %d, lower than the preceding term %d",
				ErrCorrupt, idx, e.GetTerm(), prevTerm)
		}
		prevTerm = e.GetTerm()
		s.cache.append([]*pb.Entry{e})
		next++
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return 0, pebbleErr("scan log", err)
	}
	if err := it.Close(); err != nil {
		return 0, pebbleErr("scan log", err)
	}
	return next - 1, nil
}

// verifyMeta checks the record of every node metadata item.
func (s *Store) verifyMeta() error {
	lower, upper := []byte(metaPrefix), []byte("m0") // '0' == '/'+1
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return pebbleErr("scan metadata", err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		if _, err := decodeRecord(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return pebbleErr("scan metadata", err)
	}
	if err := it.Close(); err != nil {
		return pebbleErr("scan metadata", err)
	}
	return nil
}
