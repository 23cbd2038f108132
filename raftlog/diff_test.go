package raftlog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// diffModel drives a MemoryStorage (the oracle) and a Store with the same
// random, raft-plausible operations and compares them after every step.
// "Raft-plausible" means: terms never decrease along the log, committed
// entries are never replaced by different ones, snapshots are taken at or
// below the commit index, and compaction stays at or below the snapshot. Those
// are exactly the constraints raft guarantees and the Store relies on for its
// Open-time validation; within them every MemoryStorage behaviour is covered.
type diffModel struct {
	t     *testing.T
	rnd   *rand.Rand
	mem   *raft.MemoryStorage
	s     *Store
	dir   string
	cache uint64
	term  uint64 // highest term used so far
	stats map[string]int
}

// note counts an outcome so the test can log (and assert) what it covered.
func (m *diffModel) note(op string, err error) {
	if err != nil {
		op += ":" + err.Error()
	}
	m.stats[op]++
}

func (m *diffModel) idx() (first, last, snapIdx, commit uint64) {
	first, _ = m.mem.FirstIndex()
	last, _ = m.mem.LastIndex()
	snap, _ := m.mem.Snapshot()
	hs, _, _ := m.mem.InitialState()
	return first, last, snap.GetMetadata().GetIndex(), hs.GetCommit()
}

func (m *diffModel) data() string {
	n := m.rnd.IntN(5)
	if n == 4 {
		n = 100 + m.rnd.IntN(300) // sometimes large, to exercise maxSize and cache eviction
	}
	b := make([]byte, n)
	for k := range b {
		b[k] = byte('a' + m.rnd.IntN(26))
	}
	return string(b)
}

func (m *diffModel) hardState(commit uint64) *pb.HardState {
	return hardState(m.term, uint64(m.rnd.IntN(4)), commit)
}

// appendOp writes new entries starting after the commit index, possibly
// conflicting with (replacing) an uncommitted tail, under a possibly new term.
func (m *diffModel) appendOp() {
	first, last, _, commit := m.idx()
	if m.rnd.IntN(3) == 0 {
		m.term++
	}
	start := max(commit+1, first) + uint64(m.rnd.IntN(int(last+2-max(commit+1, first))))
	n := uint64(m.rnd.IntN(7))
	var es []*pb.Entry
	for i := start; i < start+n; i++ {
		es = append(es, ent(i, m.term, m.data()))
	}
	require.NoError(m.t, m.mem.Append(es))
	_, newLast, _, _ := m.idx()
	var hs *pb.HardState
	if m.rnd.IntN(2) == 0 {
		hs = m.hardState(commit + uint64(m.rnd.IntN(int(newLast-commit+1))))
		require.NoError(m.t, m.mem.SetHardState(hs))
	}
	require.NoError(m.t, m.s.Save(hs, es, nil, m.rnd.IntN(2) == 0))
}

// overlapOp re-sends a suffix of the log starting anywhere (as after a lost
// ack): entries below the first index are trimmed, existing ones are
// identical, and anything past the last index is new.
func (m *diffModel) overlapOp() {
	first, last, _, _ := m.idx()
	lo := uint64(1)
	if first > 3 {
		lo = first - 3
	}
	start := lo + uint64(m.rnd.IntN(int(last+2-lo)))
	// Raft always hands storage a suffix of its log (Save replaces everything
	// from the first entry on), so the window runs to at least the last index.
	end := max(start, last+1) + uint64(m.rnd.IntN(4))
	var es []*pb.Entry
	for i := start; i < end; i++ {
		switch {
		case i < first:
			es = append(es, ent(i, 1, "compacted")) // trimmed by both
		case i <= last:
			got, err := m.mem.Entries(i, i+1, math.MaxUint64)
			require.NoError(m.t, err)
			es = append(es, proto.Clone(got[0]).(*pb.Entry))
		default:
			es = append(es, ent(i, m.term, m.data()))
		}
	}
	require.NoError(m.t, m.mem.Append(es))
	require.NoError(m.t, m.s.Save(nil, es, nil, true))
}

// snapshotSaveOp applies a snapshot received from a leader (sometimes an
// out-of-date one) together with following entries and the HardState.
func (m *diffModel) snapshotSaveOp() {
	_, last, snapIdx, _ := m.idx()
	idx := snapIdx + uint64(m.rnd.IntN(int(last-snapIdx+6)))
	if idx == 0 {
		idx = 1
	}
	if m.rnd.IntN(2) == 0 {
		m.term++
	}
	voters := []uint64{1, 2, uint64(3 + m.rnd.IntN(3))}
	snap := snapshot(idx, m.term, voters, m.data())
	es := termEnts(idx+1, make([]uint64, m.rnd.IntN(3))...)
	for _, e := range es {
		e.Term = new(m.term)
	}
	hs := m.hardState(idx)
	merr := m.mem.ApplySnapshot(snap)
	if merr == nil {
		require.NoError(m.t, m.mem.Append(es))
		require.NoError(m.t, m.mem.SetHardState(hs))
	}
	sameErr(m.t, merr, m.s.Save(hs, es, snap, true), "Save(snapshot %d)", idx)
	m.note("saveSnapshot", merr)
}

// createSnapshotOp takes a local snapshot at or below the commit index
// (sometimes at or below the current snapshot: ErrSnapOutOfDate).
func (m *diffModel) createSnapshotOp() {
	_, last, snapIdx, commit := m.idx()
	hi := min(last, commit)
	lo := uint64(0)
	if snapIdx > 0 {
		lo = snapIdx - 1
	}
	if hi < lo {
		return
	}
	i := lo + uint64(m.rnd.IntN(int(hi-lo+1)))
	var cs *pb.ConfState
	if m.rnd.IntN(2) == 0 {
		cs = &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{uint64(4 + m.rnd.IntN(3))}}
	}
	data := []byte(m.data())
	msnap, merr := m.mem.CreateSnapshot(i, cs, data)
	ssnap, serr := m.s.CreateSnapshot(i, cs, data)
	sameErr(m.t, merr, serr, "CreateSnapshot(%d)", i)
	m.note("createSnapshot", merr)
	if merr == nil {
		require.True(m.t, proto.Equal(pb.EnsureSnapshot(msnap), pb.EnsureSnapshot(ssnap)))
	}
}

// compactOp compacts at or below the snapshot (sometimes below the first
// index: ErrCompacted).
func (m *diffModel) compactOp() {
	first, last, snapIdx, _ := m.idx()
	hi := min(snapIdx, last)
	var i uint64
	switch {
	case m.rnd.IntN(4) == 0 || hi < first:
		i = first - 1 - min(first-1, uint64(m.rnd.IntN(2))) // at or below the truncated index
	default:
		i = first + uint64(m.rnd.IntN(int(hi-first+1)))
	}
	merr := m.mem.Compact(i)
	sameErr(m.t, merr, m.s.Compact(i), "Compact(%d)", i)
	m.note("compact", merr)
}

func (m *diffModel) reopen() {
	require.NoError(m.t, m.s.Close())
	m.s = openTest(m.t, m.dir, withCache(m.cache))
}

// probes returns random Entries calls within the range MemoryStorage
// accepts (it panics beyond LastIndex()+1).
func (m *diffModel) probes() [][3]uint64 {
	first, last, _, _ := m.idx()
	lo0 := uint64(0)
	if first > 2 {
		lo0 = first - 2
	}
	out := [][3]uint64{{first, last + 1, math.MaxUint64}, {first, last + 1, 0}}
	for range 12 {
		lo := lo0 + uint64(m.rnd.IntN(int(last+2-lo0)))
		hi := lo + uint64(m.rnd.IntN(int(last+2-lo)))
		var maxSize uint64
		switch m.rnd.IntN(4) {
		case 0:
			maxSize = 0
		case 1:
			maxSize = math.MaxUint64
		default:
			maxSize = uint64(m.rnd.IntN(600))
		}
		out = append(out, [3]uint64{lo, hi, maxSize})
	}
	return out
}

func TestDifferentialRandom(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if v := os.Getenv("RAFTLOG_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
		seeds = []uint64{seed}
	}
	steps := 200
	if testing.Short() {
		steps = 60
	}
	for _, seed := range seeds {
		for _, cache := range []uint64{1, 2000, 0} {
			t.Run(fmt.Sprintf("seed=%d/cache=%d", seed, cache), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				m := &diffModel{
					t: t, rnd: rand.New(rand.NewPCG(seed, cache)), mem: raft.NewMemoryStorage(),
					s: openTest(t, dir, withCache(cache)), dir: dir, cache: cache, term: 1, stats: map[string]int{},
				}
				for step := range steps {
					switch r := m.rnd.IntN(100); {
					case r < 50:
						m.appendOp()
					case r < 64:
						m.overlapOp()
					case r < 70:
						m.snapshotSaveOp()
					case r < 82:
						m.createSnapshotOp()
					case r < 94:
						m.compactOp()
					default:
						m.reopen()
					}
					requireSameState(t, m.mem, m.s, m.probes())
					if t.Failed() {
						t.Fatalf("diverged at step %d (seed %d)", step, seed)
					}
				}
				m.reopen()
				requireSameState(t, m.mem, m.s, nil)
				t.Logf("outcomes: %v", m.stats)
				for _, op := range []string{"compact", "createSnapshot", "saveSnapshot"} {
					require.Positive(t, m.stats[op], "no successful %s", op)
				}
			})
		}
	}
}
