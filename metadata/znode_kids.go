package metadata

import "github.com/google/btree"

// kidsDegree is the B-tree degree of a child set: wide nodes, since names
// are short and sets are either tiny or very large (a queue's or a lock's
// sequential children).
const kidsDegree = 32

// kidSet is the sorted set of a znode's child names. It is a B-tree, not a
// sorted slice: a slice insert moves the tail, and with 100,000 siblings
// under one parent (the ZooKeeper benchmark's create run, a busy queue)
// that memmove took 12% of the leader's CPU, on the raft loop.
type kidSet struct{ t *btree.BTreeG[string] }

func newKidSet() kidSet {
	return kidSet{t: btree.NewG(kidsDegree, func(a, b string) bool { return a < b })}
}

// len is the number of children; a nil set has none.
func (k kidSet) len() int {
	if k.t == nil {
		return 0
	}
	return k.t.Len()
}

// names returns the children in byte order.
func (k kidSet) names() []string {
	if k.t == nil {
		return nil
	}
	out := make([]string, 0, k.t.Len())
	k.t.Ascend(func(n string) bool {
		out = append(out, n)
		return true
	})
	return out
}

// each calls f for every child in byte order.
func (k kidSet) each(f func(name string)) {
	if k.t == nil {
		return
	}
	k.t.Ascend(func(n string) bool {
		f(n)
		return true
	})
}

// addKid adds name to parent's children.
func (e *extState) addKid(parent, name string) {
	if e.zkids == nil {
		e.zkids = map[string]kidSet{}
	}
	k, ok := e.zkids[parent]
	if !ok {
		k = newKidSet()
		e.zkids[parent] = k
	}
	k.t.ReplaceOrInsert(name)
}

// removeKid removes name from parent's children, dropping an empty set.
func (e *extState) removeKid(parent, name string) {
	k, ok := e.zkids[parent]
	if !ok {
		return
	}
	k.t.Delete(name)
	if k.t.Len() == 0 {
		delete(e.zkids, parent)
	}
}
