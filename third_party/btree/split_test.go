package btree

import (
	"runtime"
	"testing"
)

// Ascending inserts leave every left half of a split untouched for good.
// With its own array (CORRAL.md, "Splits"), such a tree holds about one
// item's size per item; with the halves sharing the split node's array it
// held about two.
func TestSplitAscendingInsertsTakeAboutTheItemsSize(t *testing.T) {
	type item struct {
		key  int
		rest [7]int64 // 64 bytes, as corral's KV items
	}
	const n = 200_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := NewBTreeGOptions(func(a, b item) bool { return a.key < b.key }, Options{Degree: 32, NoLocks: true})
	for i := 0; i < n; i++ {
		tr.Set(item{key: i})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perItem := float64(after.HeapAlloc-before.HeapAlloc) / n
	if perItem > 1.4*64 {
		t.Fatalf("%.1f bytes of heap per 64-byte item after ascending inserts, want at most %.1f", perItem, 1.4*64)
	}
	t.Logf("%.1f bytes of heap per 64-byte item", perItem)
	runtime.KeepAlive(tr)
}

// A split must not leave copies of items in the array beyond a node's
// length: they would stay reachable (and never be collected) after the
// items are deleted from the tree.
func TestSplitLeavesNoStaleItems(t *testing.T) {
	for _, order := range []string{"ascending", "descending", "shuffled"} {
		tr := NewBTreeGOptions(func(a, b *int) bool { return *a < *b }, Options{Degree: 4, NoLocks: true})
		keys := make([]int, 3000)
		for i := range keys {
			switch order {
			case "ascending":
				keys[i] = i
			case "descending":
				keys[i] = len(keys) - i
			default:
				keys[i] = (i * 7919) % len(keys)
			}
		}
		for i := range keys {
			tr.Set(&keys[i])
		}
		var walk func(n *node[*int])
		walk = func(n *node[*int]) {
			full := n.items[:cap(n.items)]
			for j := len(n.items); j < len(full); j++ {
				if full[j] != nil {
					t.Fatalf("%s: a node of %d items holds a stale item at %d: %d", order, len(n.items), j, *full[j])
				}
			}
			if !n.leaf() {
				for _, c := range *n.children {
					walk(c)
				}
			}
		}
		walk(tr.root)
		if tr.Len() != len(keys) {
			t.Fatalf("%s: %d items, want %d", order, tr.Len(), len(keys))
		}
	}
}
