package watch

import (
	"math/bits"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// checkIndexes verifies that byPath, byConn and the counters describe the
// same watches, and that no empty set or map is left behind.
func checkIndexes(t testing.TB, r *Registry) {
	t.Helper()
	r.mu.RLock()
	defer r.mu.RUnlock()
	total, recursive := 0, 0
	for c, cw := range r.byConn {
		require.NotEmpty(t, cw.paths, "conn %d", c)
		n := 0
		for p, ks := range cw.paths {
			require.NotZero(t, ks)
			n += bits.OnesCount8(uint8(ks))
			for k := Data; k <= PersistentRecursive; k++ {
				_, in := r.byPath[p].conns[k-1][c]
				require.Equal(t, ks&bit(k) != 0, in, "conn %d path %s kind %d", c, p, k)
			}
		}
		require.Equal(t, n, cw.n)
		total += n
	}
	require.Equal(t, total, r.total)
	n := 0
	for p, pw := range r.byPath {
		require.Equal(t, p, pw.path)
		m := 0
		for k := Data; k <= PersistentRecursive; k++ {
			set := pw.conns[k-1]
			require.True(t, set == nil || len(set) > 0, "empty set left on %s", p)
			m += len(set)
			if k == PersistentRecursive {
				recursive += len(set)
			}
		}
		require.Equal(t, m, pw.n)
		require.NotZero(t, m)
		n += m
	}
	require.Equal(t, total, n)
	require.Equal(t, recursive, r.recursive)
}

func TestAddIdempotent(t *testing.T) {
	r := NewRegistry(2)
	require.NoError(t, r.Add(1, "/a", Data))
	require.NoError(t, r.Add(1, "/a", Data))
	require.Equal(t, 1, r.Count())
	require.Equal(t, 1, r.CountConn(1))
	// At the limit, re-adding a held watch is still fine: it costs nothing.
	require.NoError(t, r.Add(1, "/a", Child))
	require.NoError(t, r.Add(1, "/a", Data))
	require.ErrorIs(t, r.Add(1, "/b", Data), ErrTooMany)
	require.ErrorIs(t, r.Add(1, "/a", Exist), ErrTooMany)
	// The limit is per connection.
	require.NoError(t, r.Add(2, "/b", Data))
	require.Equal(t, 3, r.Count())
	require.Equal(t, 2, r.Paths())
	// A fired watch frees its slot.
	r.Trigger(changed("/a"))
	require.NoError(t, r.Add(1, "/b", Data))
	checkIndexes(t, r)
}

func TestAddBadKind(t *testing.T) {
	r := NewRegistry(0)
	require.Error(t, r.Add(1, "/a", 0))
	require.Error(t, r.Add(1, "/a", PersistentRecursive+1))
	require.Zero(t, r.Count())
}

func TestNoLimit(t *testing.T) {
	r := NewRegistry(0)
	for i := range 1000 {
		require.NoError(t, r.Add(1, string(rune('a'+i%26))+string(rune(i)), Data))
	}
	require.Equal(t, 1000, r.CountConn(1))
}

// TestRemove is the removeWatches table: what each WatcherType removes.
func TestRemove(t *testing.T) {
	all := []w{{1, "/a", Data}, {1, "/a", Exist}, {1, "/a", Child}, {1, "/a", Persistent}, {1, "/a", PersistentRecursive}}
	for _, tc := range []struct {
		name string
		wt   int32
		left int
	}{
		{"children", TypeChildren, 4},
		{"data removes data and exists", TypeData, 3},
		{"any", TypeAny, 0},
		{"persistent", TypePersistent, 4},
		{"persistent recursive", TypePersistentRecursive, 4},
		{"unknown", 0, 5},
		{"unknown high", 6, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := registry(t, all...)
			r.Add(2, "/a", Data)
			removes := tc.left < 5
			require.Equal(t, removes, r.Check(1, "/a", tc.wt))
			require.Equal(t, 6, r.Count(), "Check removes nothing")
			require.Equal(t, removes, r.Remove(1, "/a", tc.wt))
			require.Equal(t, tc.left, r.CountConn(1))
			require.Equal(t, 1, r.CountConn(2), "other connections keep theirs")
			// Nothing left of that type: both now say false.
			require.False(t, r.Check(1, "/a", tc.wt))
			require.False(t, r.Remove(1, "/a", tc.wt))
			checkIndexes(t, r)
		})
	}
}

func TestRemoveMissing(t *testing.T) {
	r := registry(t, w{1, "/a", Data})
	require.False(t, r.Remove(2, "/a", TypeAny), "other connection")
	require.False(t, r.Remove(1, "/b", TypeAny), "other path")
	require.False(t, r.Remove(1, "/a", TypeChildren), "other type")
	require.False(t, r.Check(1, "/a", TypeChildren))
	require.True(t, r.Check(1, "/a", TypeAny))
	require.True(t, r.Remove(1, "/a", TypeAny))
	require.Zero(t, r.Paths())
	checkIndexes(t, r)
}

func TestRemoveRecursiveStopsFiring(t *testing.T) {
	r := registry(t, w{1, "/", PersistentRecursive})
	require.True(t, r.Remove(1, "/", TypePersistentRecursive))
	require.Empty(t, r.Trigger(created("/a")))
	require.Zero(t, r.recursive)
}

func TestDropConn(t *testing.T) {
	r := registry(t, w{1, "/a", Data}, w{1, "/a", Child}, w{1, "/b", PersistentRecursive},
		w{2, "/a", Data}, w{2, "/c", Persistent})
	r.DropConn(1)
	r.DropConn(1) // twice is harmless
	r.DropConn(99)
	require.Equal(t, 0, r.CountConn(1))
	require.Equal(t, 2, r.Count())
	require.Equal(t, 2, r.Paths())
	require.Equal(t, []Delivery{{2, EventNodeDeleted, "/a"}}, r.Trigger(deleted("/a")))
	require.Empty(t, r.Trigger(created("/b/x")))
	checkIndexes(t, r)
	// A dropped connection starts afresh under its limit.
	r2 := NewRegistry(1)
	require.NoError(t, r2.Add(1, "/a", Data))
	require.ErrorIs(t, r2.Add(1, "/b", Data), ErrTooMany)
	r2.DropConn(1)
	require.NoError(t, r2.Add(1, "/b", Data))
}

// TestPathCopied: the registry keeps its own copy of a path, shared by
// both indexes, so a long-lived watch does not pin the request buffer the
// server sliced the path from, and costs the path's bytes once.
func TestPathCopied(t *testing.T) {
	req := "xx/a/b"
	p := req[2:]
	r := registry(t, w{1, p, Data}, w{2, "/a/b", Child})
	r.mu.RLock()
	defer r.mu.RUnlock()
	pw := r.byPath["/a/b"]
	require.Equal(t, "/a/b", pw.path)
	require.False(t, sameBytes(p, pw.path), "copied")
	for _, c := range []ConnID{1, 2} {
		for k := range r.byConn[c].paths {
			require.True(t, sameBytes(k, pw.path), "conn %d shares the copy", c)
		}
	}
}

// sameBytes reports whether a and b are one string in memory.
func sameBytes(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}
