package raftlog

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openTest opens a store in dir with quiet logs and NoSync unless a mod says
// otherwise, closing it at the end of the test.
func openTest(t testing.TB, dir string, mods ...func(*Options)) *Store {
	t.Helper()
	o := Options{Dir: dir, Logger: quietLogger(), NoSync: true}
	for _, m := range mods {
		m(&o)
	}
	s, err := Open(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func withCache(n uint64) func(*Options) { return func(o *Options) { o.CacheBytes = n } }

func ent(i, term uint64, data string) *pb.Entry {
	e := &pb.Entry{Index: new(i), Term: new(term), Type: pb.EntryNormal.Enum()}
	if data != "" {
		e.Data = []byte(data)
	}
	return e
}

// ents returns entries lo..hi (inclusive) with the given term.
func ents(lo, hi, term uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := lo; i <= hi; i++ {
		out = append(out, ent(i, term, "x"))
	}
	return out
}

func hardState(term, vote, commit uint64) *pb.HardState {
	return &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
}

func snapshot(index, term uint64, voters []uint64, data string) *pb.Snapshot {
	return &pb.Snapshot{
		Metadata: &pb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: &pb.ConfState{Voters: voters}},
		Data:     []byte(data),
	}
}

// sameErr asserts that two errors are the same raft sentinel (or both nil).
func sameErr(t testing.TB, want, got error, msgAndArgs ...any) {
	t.Helper()
	if want == nil {
		require.NoError(t, got, msgAndArgs...)
		return
	}
	require.Error(t, got, msgAndArgs...)
	for _, sentinel := range []error{raft.ErrCompacted, raft.ErrUnavailable, raft.ErrSnapOutOfDate} {
		if errors.Is(want, sentinel) {
			require.ErrorIs(t, got, sentinel, msgAndArgs...)
			return
		}
	}
	t.Fatalf("unexpected oracle error %v", want)
}

func requireSameEntries(t testing.TB, want, got []*pb.Entry, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, len(want), len(got), msgAndArgs...)
	for k := range want {
		require.Truef(t, proto.Equal(want[k], got[k]), "entry %d: want %v got %v %v", k, want[k], got[k], msgAndArgs)
	}
}

func normConf(cs *pb.ConfState) *pb.ConfState { return cloneConfState(cs) }

// requireSameState compares everything observable through raft.Storage.
// rnd supplies the Entries probes (nil => exhaustive).
func requireSameState(t testing.TB, mem *raft.MemoryStorage, s *Store, probes [][3]uint64) {
	t.Helper()
	mf, _ := mem.FirstIndex()
	ml, _ := mem.LastIndex()
	sf, err := s.FirstIndex()
	require.NoError(t, err)
	sl, err := s.LastIndex()
	require.NoError(t, err)
	require.Equal(t, mf, sf, "FirstIndex")
	require.Equal(t, ml, sl, "LastIndex")

	lo := uint64(0)
	if mf > 2 {
		lo = mf - 2
	}
	for i := lo; i <= ml+2; i++ {
		mt, merr := mem.Term(i)
		st, serr := s.Term(i)
		sameErr(t, merr, serr, "Term(%d)", i)
		require.Equal(t, mt, st, "Term(%d)", i)
	}

	mhs, mcs, _ := mem.InitialState()
	shs, scs, err := s.InitialState()
	require.NoError(t, err)
	require.Equal(t, mhs.GetTerm(), shs.GetTerm(), "hs.Term")
	require.Equal(t, mhs.GetVote(), shs.GetVote(), "hs.Vote")
	require.Equal(t, mhs.GetCommit(), shs.GetCommit(), "hs.Commit")
	require.True(t, proto.Equal(normConf(mcs), scs), "ConfState: want %v got %v", mcs, scs)

	msnap, _ := mem.Snapshot()
	ssnap, err := s.Snapshot()
	require.NoError(t, err)
	require.True(t, proto.Equal(pb.EnsureSnapshotMetadata(msnap.GetMetadata()), ssnap.GetMetadata()),
		"snapshot metadata: want %v got %v", msnap.GetMetadata(), ssnap.GetMetadata())
	require.True(t, bytes.Equal(msnap.GetData(), ssnap.GetData()), "snapshot data")

	if probes == nil {
		for a := lo; a <= ml+1; a++ {
			for b := a; b <= ml+1; b++ {
				probes = append(probes, [3]uint64{a, b, ^uint64(0)})
			}
		}
	}
	for _, p := range probes {
		requireSameEntriesCall(t, mem, s, p[0], p[1], p[2])
	}
}

func requireSameEntriesCall(t testing.TB, mem *raft.MemoryStorage, s *Store, lo, hi, maxSize uint64) {
	t.Helper()
	me, merr := mem.Entries(lo, hi, maxSize)
	se, serr := s.Entries(lo, hi, maxSize)
	sameErr(t, merr, serr, "Entries(%d,%d,%d)", lo, hi, maxSize)
	requireSameEntries(t, me, se, "Entries(%d,%d,%d)", lo, hi, maxSize)
}
