package raftlog

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// termEnts builds entries from index lo with the given terms (raft's
// storage_test.go index(lo).terms(...)).
func termEnts(lo uint64, terms ...uint64) []*pb.Entry {
	out := make([]*pb.Entry, len(terms))
	for k, t := range terms {
		out[k] = ent(lo+uint64(k), t, fmt.Sprintf("d%d", lo+uint64(k)))
	}
	return out
}

// cacheVariants runs f with a cache that holds everything and with one that
// holds (almost) nothing, so both the cache and the Pebble read paths are
// checked against the oracle.
func cacheVariants(t *testing.T, f func(t *testing.T, cache uint64)) {
	for _, c := range []uint64{0, 1, 300} {
		t.Run(fmt.Sprintf("cache=%d", c), func(t *testing.T) { f(t, c) })
	}
}

// standardPair returns an oracle and a store both holding the dummy {3,3}
// followed by entries with the given terms from index 4 (raft's fixture).
func standardPair(t *testing.T, cache uint64, terms ...uint64) (*raft.MemoryStorage, *Store, string) {
	t.Helper()
	dir := t.TempDir()
	s := openTest(t, dir, withCache(cache))
	mem := raft.NewMemoryStorage()
	snap := snapshot(3, 3, []uint64{1, 2, 3}, "state@3")
	require.NoError(t, mem.ApplySnapshot(snap))
	tail := termEnts(4, terms...)
	require.NoError(t, mem.Append(tail))
	hs := hardState(terms[len(terms)-1], 1, 3)
	require.NoError(t, mem.SetHardState(hs))
	require.NoError(t, s.Save(hs, tail, snap, true))
	return mem, s, dir
}

func reopen(t *testing.T, s *Store, dir string, cache uint64) *Store {
	t.Helper()
	require.NoError(t, s.Close())
	return openTest(t, dir, withCache(cache))
}

func TestFreshStore(t *testing.T) {
	s := openTest(t, t.TempDir())
	requireSameState(t, raft.NewMemoryStorage(), s, nil)
	_, err := s.Entries(1, 1, math.MaxUint64)
	require.ErrorIs(t, err, raft.ErrUnavailable)
	_, err = s.Entries(0, 1, math.MaxUint64)
	require.ErrorIs(t, err, raft.ErrCompacted)
	empty, err := s.IsEmpty()
	require.NoError(t, err)
	require.True(t, empty)
	hs, cs, err := s.InitialState()
	require.NoError(t, err)
	require.Nil(t, hs)
	require.NotNil(t, cs)
}

func TestTermAndEntriesTable(t *testing.T) {
	cacheVariants(t, func(t *testing.T, cache uint64) {
		mem, s, dir := standardPair(t, cache, 4, 5, 6)
		all, err := mem.Entries(4, 7, math.MaxUint64)
		require.NoError(t, err)
		sz := func(k int) uint64 { return uint64(proto.Size(all[k])) }
		maxes := []uint64{0, 1, sz(0), sz(0) + sz(1) - 1, sz(0) + sz(1), sz(0) + sz(1) + sz(2)/2,
			sz(0) + sz(1) + sz(2) - 1, sz(0) + sz(1) + sz(2), math.MaxUint64}
		var probes [][3]uint64
		for lo := uint64(2); lo <= 7; lo++ {
			for hi := lo; hi <= 7; hi++ {
				for _, m := range maxes {
					probes = append(probes, [3]uint64{lo, hi, m})
				}
			}
		}
		requireSameState(t, mem, s, probes)
		s = reopen(t, s, dir, cache)
		requireSameState(t, mem, s, probes)
	})
}

func TestAppendTable(t *testing.T) {
	cases := [][]*pb.Entry{
		termEnts(1, 1, 2),       // entirely compacted: ignored
		termEnts(3, 3, 4, 5),    // identical
		termEnts(3, 3, 6, 6),    // conflict at 4
		termEnts(3, 3, 4, 5, 5), // extend
		termEnts(2, 3, 3, 5),    // trim incoming, truncate existing
		termEnts(4, 5),          // truncate existing and append
		termEnts(6, 5),          // direct append
		termEnts(5, 6),          // conflict at the last entry only
	}
	for k, tc := range cases {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			cacheVariants(t, func(t *testing.T, cache uint64) {
				mem, s, dir := standardPair(t, cache, 4, 5)
				require.NoError(t, mem.Append(tc))
				require.NoError(t, s.Save(nil, tc, nil, true))
				requireSameState(t, mem, s, nil)
				s = reopen(t, s, dir, cache)
				requireSameState(t, mem, s, nil)
			})
		})
	}
}

func TestCompactTable(t *testing.T) {
	for _, i := range []uint64{2, 3, 4, 5} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			cacheVariants(t, func(t *testing.T, cache uint64) {
				mem, s, dir := standardPair(t, cache, 4, 5, 6)
				// Compact requires a snapshot covering i.
				if i > 3 {
					_, err := mem.CreateSnapshot(5, nil, []byte("s5"))
					require.NoError(t, err)
					_, err = s.CreateSnapshot(5, nil, []byte("s5"))
					require.NoError(t, err)
				}
				sameErr(t, mem.Compact(i), s.Compact(i), "Compact(%d)", i)
				requireSameState(t, mem, s, nil)
				s = reopen(t, s, dir, cache)
				requireSameState(t, mem, s, nil)
			})
		})
	}
}

func TestCreateSnapshotTable(t *testing.T) {
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}
	for _, tc := range []struct {
		i  uint64
		cs *pb.ConfState
	}{{2, cs}, {3, cs}, {4, cs}, {5, nil}, {6, cs}} {
		t.Run(fmt.Sprint(tc.i), func(t *testing.T) {
			cacheVariants(t, func(t *testing.T, cache uint64) {
				mem, s, dir := standardPair(t, cache, 4, 5, 6)
				msnap, merr := mem.CreateSnapshot(tc.i, tc.cs, []byte("data"))
				ssnap, serr := s.CreateSnapshot(tc.i, tc.cs, []byte("data"))
				sameErr(t, merr, serr)
				if merr == nil {
					require.True(t, proto.Equal(pb.EnsureSnapshot(msnap), pb.EnsureSnapshot(ssnap)), "%v vs %v", msnap, ssnap)
				}
				requireSameState(t, mem, s, nil)
				s = reopen(t, s, dir, cache)
				requireSameState(t, mem, s, nil)
			})
		})
	}
}

func TestSaveSnapshotTable(t *testing.T) {
	for _, idx := range []uint64{2, 3, 4, 6, 9} {
		t.Run(fmt.Sprint(idx), func(t *testing.T) {
			cacheVariants(t, func(t *testing.T, cache uint64) {
				mem, s, dir := standardPair(t, cache, 4, 5, 6)
				snap := snapshot(idx, 7, []uint64{1, 2}, fmt.Sprint("state@", idx))
				after := termEnts(idx+1, 7, 7)
				hs := hardState(7, 2, idx)
				merr := mem.ApplySnapshot(snap)
				if merr == nil {
					require.NoError(t, mem.Append(after))
					require.NoError(t, mem.SetHardState(hs))
				}
				sameErr(t, merr, s.Save(hs, after, snap, true))
				requireSameState(t, mem, s, nil)
				s = reopen(t, s, dir, cache)
				requireSameState(t, mem, s, nil)
			})
		})
	}
}

// TestStoreErrors covers the cases where MemoryStorage panics or a durable
// store must refuse a write that would leave it invalid; none may write.
func TestStoreErrors(t *testing.T) {
	mem, s, dir := standardPair(t, 0, 4, 5, 6)
	_, err := s.Entries(4, 8, math.MaxUint64)
	require.ErrorIs(t, err, raft.ErrUnavailable)
	_, err = s.Entries(6, 5, math.MaxUint64)
	require.ErrorIs(t, err, raft.ErrUnavailable)

	require.ErrorContains(t, s.Save(nil, termEnts(8, 6), nil, true), "gap")
	require.ErrorContains(t, s.Save(nil, []*pb.Entry{ent(7, 6, ""), ent(9, 6, "")}, nil, true), "contiguous")
	require.ErrorContains(t, s.Save(hardState(6, 1, 7), nil, nil, true), "beyond last index")
	// Truncating below the saved commit index is refused too.
	require.NoError(t, s.Save(hardState(6, 1, 6), nil, nil, true))
	require.NoError(t, mem.SetHardState(hardState(6, 1, 6)))
	require.ErrorContains(t, s.Save(nil, termEnts(5, 7), nil, true), "beyond last index")
	// A snapshot that is out of date rejects the whole batch.
	require.ErrorIs(t, s.Save(hardState(9, 1, 6), termEnts(7, 9), snapshot(3, 3, nil, ""), true), raft.ErrSnapOutOfDate)

	_, err = s.CreateSnapshot(7, nil, nil)
	require.ErrorIs(t, err, raft.ErrUnavailable)
	require.ErrorContains(t, s.Compact(5), "beyond snapshot index")
	require.ErrorIs(t, s.Compact(3), raft.ErrCompacted)
	require.ErrorIs(t, s.Compact(9), raft.ErrUnavailable)

	requireSameState(t, mem, s, nil)
	s = reopen(t, s, dir, 0)
	requireSameState(t, mem, s, nil)

	require.NoError(t, s.Close())
	_, err = s.LastIndex()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Save(nil, termEnts(7, 6), nil, true), ErrClosed)
}

func TestEntriesReturnsFreshSlice(t *testing.T) {
	cacheVariants(t, func(t *testing.T, cache uint64) {
		_, s, _ := standardPair(t, cache, 4, 5, 6)
		got, err := s.Entries(4, 6, math.MaxUint64)
		require.NoError(t, err)
		_ = append(got, ent(99, 99, "clobber"))
		again, err := s.Entries(4, 7, math.MaxUint64)
		require.NoError(t, err)
		require.Equal(t, uint64(6), again[2].GetIndex())
	})
}

func TestConfStateMetaAndReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	_, ok, err := s.GetMeta("cluster_id")
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, s.SetMeta("cluster_id", "c-1"))
	require.NoError(t, s.SetMeta("node_id", "7"))
	cs := &pb.ConfState{Voters: []uint64{1, 2}, Learners: []uint64{3}}
	require.NoError(t, s.SetConfState(cs))
	require.NoError(t, s.Save(hardState(2, 1, 0), termEnts(1, 1, 2), nil, true))

	s = reopen(t, s, dir, 0)
	v, ok, err := s.GetMeta("cluster_id")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "c-1", v)
	v, _, _ = s.GetMeta("node_id")
	require.Equal(t, "7", v)
	hs, gotCS, err := s.InitialState()
	require.NoError(t, err)
	require.Equal(t, uint64(2), hs.GetTerm())
	require.True(t, proto.Equal(cloneConfState(cs), gotCS))
	empty, err := s.IsEmpty()
	require.NoError(t, err)
	require.False(t, empty)
}

func TestBootstrapState(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.Error(t, s.Bootstrap(nil))
	require.Error(t, s.Bootstrap([]uint64{1, 0}))
	require.Error(t, s.Bootstrap([]uint64{1, 1}))
	require.NoError(t, s.Bootstrap([]uint64{3, 1, 2}))
	require.Error(t, s.Bootstrap([]uint64{1, 2, 3}), "second bootstrap must fail")

	// The oracle: a MemoryStorage that applied the equivalent snapshot.
	mem := raft.NewMemoryStorage()
	require.NoError(t, mem.ApplySnapshot(snapshot(1, 1, []uint64{1, 2, 3}, "")))
	require.NoError(t, mem.SetHardState(hardState(1, 0, 1)))
	requireSameState(t, mem, s, nil)
	s = reopen(t, s, dir, 0)
	requireSameState(t, mem, s, nil)
	first, _ := s.FirstIndex()
	require.Greater(t, first, uint64(1), "raft's bootstrap.go asks for first index > 1")
}

func TestOnSyncHook(t *testing.T) {
	var calls int
	s := openTest(t, t.TempDir(), func(o *Options) {
		o.NoSync = false
		o.OnSync = func(d time.Duration) {
			require.Positive(t, d)
			calls++
		}
	})
	require.NoError(t, s.Save(hardState(1, 1, 0), termEnts(1, 1), nil, true))
	require.Equal(t, 1, calls)
	require.NoError(t, s.Save(hardState(1, 1, 1), nil, nil, false)) // commit-only: not synced
	require.Equal(t, 1, calls)
	require.NoError(t, s.SetMeta("node_id", "1"))
	require.Equal(t, 2, calls)

	// NoSync suppresses both the fsync and the hook.
	calls = 0
	s2 := openTest(t, t.TempDir(), func(o *Options) { o.OnSync = func(time.Duration) { calls++ } })
	require.NoError(t, s2.Save(hardState(1, 1, 0), termEnts(1, 1), nil, true))
	require.Zero(t, calls)
}
