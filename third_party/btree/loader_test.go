package btree

import (
	"math/rand"
	"testing"
)

// checkTree verifies the B-tree invariants: items ascending, every leaf at
// the same depth, every node but the root within [min, max] items, a
// branch with one more child than items, and counts that add up.
func checkTree[T any](t *testing.T, tr *BTreeG[T]) {
	t.Helper()
	if tr.root == nil {
		if tr.count != 0 {
			t.Fatalf("empty tree counts %d", tr.count)
		}
		return
	}
	leafDepth := -1
	var have bool
	var prev T
	var walk func(n *node[T], depth int, root bool) int
	walk = func(n *node[T], depth int, root bool) int {
		if len(n.items) > tr.max || (!root && len(n.items) < tr.min) || (root && len(n.items) == 0) {
			t.Fatalf("node at depth %d holds %d items (min %d, max %d, root %t)", depth, len(n.items), tr.min, tr.max, root)
		}
		count := len(n.items)
		if n.leaf() {
			if leafDepth == -1 {
				leafDepth = depth
			} else if depth != leafDepth {
				t.Fatalf("leaf at depth %d, another at %d", depth, leafDepth)
			}
			for _, it := range n.items {
				if have && !tr.less(prev, it) {
					t.Fatalf("items out of order")
				}
				prev, have = it, true
			}
		} else {
			if len(*n.children) != len(n.items)+1 {
				t.Fatalf("branch with %d items and %d children", len(n.items), len(*n.children))
			}
			for i, c := range *n.children {
				count += walk(c, depth+1, false)
				if i < len(n.items) {
					if !tr.less(prev, n.items[i]) {
						t.Fatalf("separator out of order")
					}
					prev = n.items[i]
				}
			}
		}
		if n.count != count {
			t.Fatalf("node at depth %d counts %d, holds %d", depth, n.count, count)
		}
		return count
	}
	if got := walk(tr.root, 0, true); got != tr.count {
		t.Fatalf("tree counts %d, holds %d", tr.count, got)
	}
}

func TestLoaderBuildsValidTrees(t *testing.T) {
	for _, degree := range []int{2, 3, 4, 32} {
		for n := 0; n < 3000; n += 1 + n/7 {
			tr := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{Degree: degree})
			l := tr.NewLoader()
			for i := 0; i < n; i++ {
				if !l.Append(i * 2) {
					t.Fatalf("append %d refused", i*2)
				}
			}
			l.Finish()
			checkTree(t, tr)
			if tr.Len() != n {
				t.Fatalf("degree %d n %d: Len %d", degree, n, tr.Len())
			}
			for i := 0; i < n; i++ {
				if v, ok := tr.GetAt(i); !ok || v != i*2 {
					t.Fatalf("degree %d n %d: GetAt(%d) = %d %t", degree, n, i, v, ok)
				}
			}
		}
	}
}

func TestLoaderTreeTakesChanges(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, degree := range []int{2, 3, 32} {
		for _, n := range []int{0, 1, 5, 62, 63, 64, 500, 4000} {
			tr := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{Degree: degree})
			l := tr.NewLoader()
			want := map[int]bool{}
			for i := 0; i < n; i++ {
				l.Append(i * 3)
				want[i*3] = true
			}
			l.Finish()
			snap := tr.Copy()
			for op := 0; op < 3*n+100; op++ {
				k := rng.Intn(3*n + 10)
				if rng.Intn(2) == 0 {
					tr.Set(k)
					want[k] = true
				} else {
					tr.Delete(k)
					delete(want, k)
				}
			}
			checkTree(t, tr)
			checkTree(t, snap)
			if tr.Len() != len(want) {
				t.Fatalf("Len %d, want %d", tr.Len(), len(want))
			}
			for k := range want {
				if _, ok := tr.Get(k); !ok {
					t.Fatalf("missing %d", k)
				}
			}
			if snap.Len() != n {
				t.Fatalf("copy changed: %d", snap.Len())
			}
			for i := 0; i < n; i++ {
				if _, ok := snap.Get(i * 3); !ok {
					t.Fatalf("copy lost %d", i*3)
				}
			}
		}
	}
}

func TestLoaderRefusesItemsOutOfOrder(t *testing.T) {
	tr := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{})
	l := tr.NewLoader()
	if !l.Append(5) || l.Append(5) || l.Append(4) || !l.Append(6) {
		t.Fatal("order not enforced")
	}
	l.Finish()
	if tr.Len() != 2 {
		t.Fatalf("Len %d", tr.Len())
	}
}

// The point of the loader: every node it finishes is full, where Load
// leaves them half full. Only the last two nodes of each level, which
// Finish evens out, may hold less.
func TestLoaderFillsNodes(t *testing.T) {
	const n = 100000
	tr := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{Degree: 32})
	l := tr.NewLoader()
	for i := 0; i < n; i++ {
		l.Append(i)
	}
	l.Finish()
	checkTree(t, tr)
	levels := map[int][]int{}
	var walk func(nd *node[int], depth int)
	walk = func(nd *node[int], depth int) {
		levels[depth] = append(levels[depth], len(nd.items))
		if !nd.leaf() {
			for _, c := range *nd.children {
				walk(c, depth+1)
			}
		}
	}
	walk(tr.root, 0)
	for depth := 1; depth < len(levels); depth++ {
		sizes := levels[depth]
		for i, size := range sizes[:len(sizes)-2] {
			if size != tr.max {
				t.Fatalf("depth %d, node %d of %d holds %d items, want %d", depth, i, len(sizes), size, tr.max)
			}
		}
	}

	loaded := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{Degree: 32})
	for i := 0; i < n; i++ {
		loaded.Load(i)
	}
	leaves := func(tr *BTreeG[int]) int {
		count := 0
		tr.Walk(func([]int) bool { count++; return true })
		return count
	}
	if got, half := leaves(tr), leaves(loaded); got*3 > half*2 {
		t.Fatalf("the loader made %d leaves, Load %d: not fuller", got, half)
	}
}

// A loaded tree answers like one built by Set: iteration both ways, seeks,
// ranges.
func TestLoaderTreeReadsLikeASetTree(t *testing.T) {
	for _, n := range []int{1, 63, 64, 127, 4033, 10000} {
		loaded := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{Degree: 32})
		set := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{Degree: 32})
		l := loaded.NewLoader()
		for i := 0; i < n; i++ {
			l.Append(i * 2)
			set.Set(i * 2)
		}
		l.Finish()
		collect := func(tr *BTreeG[int], pivot int, desc bool) []int {
			var out []int
			f := func(v int) bool { out = append(out, v); return len(out) < 100 }
			if desc {
				tr.Descend(pivot, f)
			} else {
				tr.Ascend(pivot, f)
			}
			return out
		}
		for _, pivot := range []int{-1, 0, 1, n, n + 1, 2*n - 2, 2 * n} {
			for _, desc := range []bool{false, true} {
				a, b := collect(loaded, pivot, desc), collect(set, pivot, desc)
				if len(a) != len(b) {
					t.Fatalf("n %d pivot %d desc %t: %d items, want %d", n, pivot, desc, len(a), len(b))
				}
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("n %d pivot %d desc %t: item %d is %d, want %d", n, pivot, desc, i, a[i], b[i])
					}
				}
			}
		}
		it := loaded.Iter()
		if it.Seek(n) != (n <= 2*n-2) {
			t.Fatalf("n %d: Seek", n)
		}
		it.Release()
		if mn, _ := loaded.Min(); mn != 0 {
			t.Fatalf("n %d: Min %d", n, mn)
		}
		if mx, _ := loaded.Max(); mx != 2*n-2 {
			t.Fatalf("n %d: Max %d", n, mx)
		}
	}
}

func TestNewLoaderPanicsOnATreeWithItems(t *testing.T) {
	tr := NewBTreeGOptions(func(a, b int) bool { return a < b }, Options{})
	tr.Set(1)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	tr.NewLoader()
}
