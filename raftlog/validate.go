package raftlog

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
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
	if st.snapFile, err = s.loadSnapData(st.snap); err != nil {
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
	// Only a store found intact is tidied: a crash between writing a
	// snapshot file and committing the metadata naming it leaves a file no
	// metadata names, a crash while writing one leaves a .tmp.
	keep := ""
	if st.snapFile != nil {
		keep = st.snapFile.name
	}
	s.removeSnapFiles(keep)
	return nil
}

// loadSnapData verifies the data of the snapshot meta describes and returns
// its file, or nil if the data is inline under keySnapData (a store written
// before snapshot files; the next snapshot moves it to a file) or there is
// no snapshot.
func (s *Store) loadSnapData(meta *pb.SnapshotMetadata) (*snapRef, error) {
	var ref *snapRef
	payload, found, err := s.get(keySnapFile)
	if err != nil {
		return nil, err
	}
	if found {
		if ref, err = decodeSnapRefPayload(payload); err != nil {
			return nil, err
		}
	}
	if ref != nil && ref.index == meta.GetIndex() && ref.term == meta.GetTerm() {
		data, unmap, err := s.mapSnapFile(ref)
		if err != nil {
			return nil, err
		}
		s.opened = &openedSnap{ref: ref, data: data, unmap: unmap} // Open runs alone: no lock needed yet
		return ref, nil
	}
	_, inline, err := s.get(keySnapData) // verifies the inline blob's CRC
	if err != nil {
		return nil, err
	}
	switch {
	case inline:
		// Written by an earlier version (a stale file record beside it can
		// only come from a downgrade, which wrote the inline blob later).
		return nil, nil
	case ref != nil:
		return nil, fmt.Errorf("%w: snapshot file record names snapshot %d term %d but the snapshot metadata is %d term %d",
			ErrCorrupt, ref.index, ref.term, meta.GetIndex(), meta.GetTerm())
	case meta.GetIndex() > 0:
		return nil, fmt.Errorf("%w: snapshot %d has no data: neither %s nor %s is stored",
			ErrCorrupt, meta.GetIndex(), describeKey(keySnapFile), describeKey(keySnapData))
	}
	return nil, nil
}

// scanLog verifies every log entry (checksum, index, contiguity from
// trunc.index+1, non-decreasing terms), warms the tail cache, and returns
// the last index. It goes from the newest entry back: the newest, as many
// as the tail cache keeps, are decoded into it, and the older ones are only
// checked (checkEntryRecord). Decoding every entry, to keep only the last
// of them, was two thirds of opening a log of 100,000 entries
// (docs/PERFORMANCE.md, "Opening the log").
func (s *Store) scanLog(trunc truncState) (last uint64, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logPrefix, UpperBound: logPrefixEnd})
	if err != nil {
		return 0, pebbleErr("scan log", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			last, err = 0, pebbleErr("scan log", cerr)
		}
	}()
	var (
		cached []*pb.Entry // newest first
		budget = s.cache.max
		next   uint64 // the index the next entry back must have
		after  struct {
			idx, term uint64 // the entry after the one being checked
		}
	)
	for valid := it.Last(); valid; valid = it.Prev() {
		idx, err := parseLogKey(it.Key())
		if err != nil {
			return 0, err
		}
		if after.idx == 0 {
			last, next = idx, idx
		}
		switch {
		case idx <= trunc.index:
			return 0, fmt.Errorf("%w: log entry %d survives below the truncated index %d", ErrCorrupt, idx, trunc.index)
		case idx != next:
			return 0, fmt.Errorf("%w: log entries %d..%d are missing (log must be contiguous from %d)",
				ErrCorrupt, idx+1, next, trunc.index+1)
		}
		var term uint64
		if budget > 0 {
			e, err := decodeEntryRecord(logKey(idx), slices.Clone(it.Value()))
			if err != nil {
				return 0, err
			}
			term = e.GetTerm()
			cached = append(cached, e)
			budget -= min(budget, uint64(proto.Size(e))+entryOverhead)
		} else if term, err = checkEntryRecord(it.Key(), it.Value()); err != nil {
			return 0, err
		}
		if after.idx != 0 && after.term < term {
			return 0, fmt.Errorf("%w: log entry %d has term %d, lower than the preceding term %d",
				ErrCorrupt, after.idx, after.term, term)
		}
		after.idx, after.term = idx, term
		next = idx - 1
	}
	if err := it.Error(); err != nil {
		return 0, pebbleErr("scan log", err)
	}
	if after.idx == 0 {
		return trunc.index, nil // empty
	}
	if next != trunc.index {
		return 0, fmt.Errorf("%w: log entries %d..%d are missing (log must be contiguous from %d)",
			ErrCorrupt, trunc.index+1, next, trunc.index+1)
	}
	if after.term < trunc.term {
		return 0, fmt.Errorf("%w: log entry %d has term %d, lower than the preceding term %d",
			ErrCorrupt, after.idx, after.term, trunc.term)
	}
	slices.Reverse(cached)
	s.cache.append(cached)
	return last, nil
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
