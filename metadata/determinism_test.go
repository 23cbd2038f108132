package metadata

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

type logEntry struct {
	index uint64
	data  []byte
}

// randomLog generates n log entries by proposing random commands against a
// scratch State (so compare-and-sets succeed often enough to matter). The
// entries mix puts, deletes, CAS puts/deletes with right and wrong revisions,
// cluster ids, raft no-ops, index gaps, garbage and unknown ignorable ops.
func randomLog(t testing.TB, seed uint64, n int) []logEntry {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	scratch := New()
	key := func() string { return fmt.Sprintf("k/%03d", rng.IntN(300)) }
	var (
		log   []logEntry
		index uint64
	)
	for i := range n {
		index += 1 + uint64(rng.IntN(100)/98) // occasional gap
		var data []byte
		c := &Command{ID: uint64(i + 1)}
		switch p := rng.IntN(100); {
		case p < 45:
			c.Op, c.Key = OpPut, key()
			c.Value = make([]byte, rng.IntN(24))
			for j := range c.Value {
				c.Value[j] = byte(rng.Uint32())
			}
		case p < 60:
			c.Op, c.Key = OpDelete, key()
		case p < 80:
			c.Op, c.Key, c.HasPrev = OpPut, key(), true
			c.Value = []byte(fmt.Sprint(i))
			if kv, ok := scratch.Get(c.Key); ok && rng.IntN(3) > 0 {
				c.PrevRevision = kv.ModRevision
			} else {
				c.PrevRevision = int64(rng.IntN(3)) // 0 = must not exist
			}
		case p < 88:
			c.Op, c.Key, c.HasPrev = OpDelete, key(), true
			if kv, ok := scratch.Get(c.Key); ok && rng.IntN(2) > 0 {
				c.PrevRevision = kv.ModRevision
			}
		case p < 90:
			c.Op, c.Key = OpSetClusterID, fmt.Sprintf("cluster-%d", rng.IntN(3))
		case p < 94:
			data = []byte{} // raft no-op
		case p < 97:
			data = []byte{CommandFormatV1, byte(rng.Uint32())} // garbage
		default:
			data = []byte{CommandFormatV1, 0x80 | byte(10+rng.IntN(100)), byte(rng.IntN(128)), 1, 7}
		}
		if data == nil {
			data = c.Marshal()
		}
		_, _ = scratch.Apply(index, data)
		log = append(log, logEntry{index: index, data: data})
	}
	return log
}

type outcome struct {
	id       uint64
	rev, del int64
	err      string
}

func replay(s *State, log []logEntry) []outcome {
	out := make([]outcome, 0, len(log))
	for _, e := range log {
		id, res := s.Apply(e.index, e.data)
		o := outcome{id: id, rev: res.Revision, del: res.Deleted}
		if res.Err != nil {
			o.err = res.Err.Error()
		}
		out = append(out, o)
	}
	return out
}

func mustSnapshot(t testing.TB, s *State) []byte {
	b, err := s.Snapshot()
	require.NoError(t, err)
	return b
}

func requireSameState(t *testing.T, a, b *State) {
	t.Helper()
	require.Equal(t, mustSnapshot(t, a), mustSnapshot(t, b))
	require.Equal(t, a.AppliedIndex(), b.AppliedIndex())
	require.Equal(t, a.Revision(), b.Revision())
	require.Equal(t, a.ClusterID(), b.ClusterID())
	for i := range 300 {
		k := fmt.Sprintf("k/%03d", i)
		kva, oka := a.Get(k)
		kvb, okb := b.Get(k)
		require.Equal(t, oka, okb, k)
		require.Equal(t, kva, kvb, k)
	}
	require.Equal(t, a.Range("", 0), b.Range("", 0))
}

func TestDeterminism(t *testing.T) {
	const n = 10000
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			log := randomLog(t, seed, n)
			a, b := New(), New()
			outA, outB := replay(a, log), replay(b, log)
			require.Equal(t, outA, outB, "identical results")
			requireSameState(t, a, b)
			require.Positive(t, a.Count())
			require.NotEmpty(t, a.ClusterID())

			// Snapshot at a random point, restore, apply the rest: same as
			// the full replay, including every per-entry result.
			rng := rand.New(rand.NewPCG(seed, 7))
			cut := rng.IntN(n + 1)
			c := New()
			outC := replay(c, log[:cut])
			r, err := Restore(mustSnapshot(t, c))
			require.NoError(t, err)
			outC = append(outC, replay(r, log[cut:])...)
			require.Equal(t, outA, outC)
			requireSameState(t, a, r)
		})
	}
}

// TestDeterminismStats guards against a generator that stops exercising the
// interesting paths (e.g. CAS never succeeding).
func TestDeterminismStats(t *testing.T) {
	var ok, casOK, cmpFail, deleted, other int
	s := New()
	for _, e := range randomLog(t, 1, 10000) {
		c, _ := UnmarshalCommand(e.data)
		_, res := s.Apply(e.index, e.data)
		switch {
		case res.Err == nil:
			ok++
			if c != nil && c.HasPrev && res.Revision > 0 {
				casOK++
			}
		case errors.Is(res.Err, ErrCompareFailed):
			cmpFail++
		default:
			other++
		}
		deleted += int(res.Deleted)
	}
	require.Greater(t, ok, 5000)
	require.Greater(t, casOK, 500)
	require.Greater(t, cmpFail, 500)
	require.Greater(t, deleted, 500)
	require.Greater(t, other, 100) // garbage, cluster id mismatches
}
