package btree

// LoaderG builds a BTreeG from items given in ascending order, bottom up,
// filling every node to its capacity. A tree grown by Load or Set from
// sorted items is left with every node half full, since a full node is
// split in the middle and its left half is never appended to again; that
// tree takes twice the memory and many more allocations to build.
//
// A LoaderG is not safe for concurrent use. The tree it builds is not
// visible until Finish.
type LoaderG[T any] struct {
	tr    *BTreeG[T]
	spine []*node[T] // spine[0] is the leaf being filled, spine[k] its ancestor k levels up
	count int
	prev  T
}

// NewLoader returns a LoaderG that builds into tr, which must be empty;
// Finish sets tr's contents. It panics if tr is not empty.
func (tr *BTreeG[T]) NewLoader() *LoaderG[T] {
	if tr.lock(true) {
		defer tr.unlock(true)
	}
	if tr.root != nil {
		panic("btree: NewLoader on a tree that is not empty")
	}
	tr.init(0)
	return &LoaderG[T]{tr: tr}
}

// Append adds item, which must come after every item appended before it.
// It returns false, and adds nothing, if it does not.
func (l *LoaderG[T]) Append(item T) bool {
	tr := l.tr
	if l.count > 0 && !tr.less(l.prev, item) {
		return false
	}
	l.prev = item
	l.count++
	if len(l.spine) == 0 {
		l.spine = append(l.spine, l.newLeaf())
	}
	leaf := l.spine[0]
	if len(leaf.items) < tr.max {
		leaf.items = append(leaf.items, item)
		return true
	}
	// The leaf is full: item goes up as the separator between it and a
	// new, empty leaf.
	leaf.count = len(leaf.items)
	next := l.newLeaf()
	l.spine[0] = next
	l.addSeparator(1, item, leaf, next)
	return true
}

// addSeparator appends sep and the child right of it (right) to the spine
// node at level k; left is the child before sep, already in that node
// unless level k is new.
func (l *LoaderG[T]) addSeparator(k int, sep T, left, right *node[T]) {
	tr := l.tr
	if k == len(l.spine) {
		root := l.newBranch()
		*root.children = append(*root.children, left)
		l.spine = append(l.spine, root)
	}
	n := l.spine[k]
	if len(n.items) < tr.max {
		n.items = append(n.items, sep)
		*n.children = append(*n.children, right)
		return
	}
	// n is full: sep goes up between n and a new node holding right.
	n.updateCount()
	next := l.newBranch()
	*next.children = append(*next.children, right)
	l.spine[k] = next
	l.addSeparator(k+1, sep, n, next)
}

func (l *LoaderG[T]) newLeaf() *node[T] {
	n := l.tr.newNode(true)
	n.items = make([]T, 0, l.tr.max)
	return n
}

func (l *LoaderG[T]) newBranch() *node[T] {
	n := l.tr.newNode(false)
	n.items = make([]T, 0, l.tr.max)
	*n.children = make([]*node[T], 0, l.tr.max+1)
	return n
}

// Finish completes the tree and makes it tr's contents. The loader must
// not be used after.
func (l *LoaderG[T]) Finish() {
	tr := l.tr
	if tr.lock(true) {
		defer tr.unlock(true)
	}
	if l.count == 0 {
		l.spine = nil
		return
	}
	// The nodes on the right spine are the only ones not yet counted, and
	// the only ones that may hold fewer than the minimum of items.
	for _, n := range l.spine {
		n.updateCount()
	}
	// The top is never empty: a level is added with the separator that
	// made it (addSeparator).
	root := l.spine[len(l.spine)-1]
	l.spine = nil
	for n := root; !n.leaf(); n = (*n.children)[len(*n.children)-1] {
		last := len(*n.children) - 1
		if len((*n.children)[last].items) < tr.min {
			tr.loaderSpread(n, last-1)
		}
	}
	tr.root = root
	tr.count = l.count
}

// loaderSpread shares the items of n's children i and i+1, and the
// separator between them, evenly between the two. Child i is full and i+1
// is short, so both end with at least the minimum.
func (tr *BTreeG[T]) loaderSpread(n *node[T], i int) {
	left, right := (*n.children)[i], (*n.children)[i+1]
	items := make([]T, 0, len(left.items)+1+len(right.items))
	items = append(items, left.items...)
	items = append(items, n.items[i])
	items = append(items, right.items...)
	a := len(items) / 2

	var zero T
	for j := a; j < len(left.items); j++ {
		left.items[j] = zero // no stale references past the end
	}
	left.items = append(left.items[:0], items[:a]...)
	n.items[i] = items[a]
	right.items = append(make([]T, 0, tr.max), items[a+1:]...)

	if !left.leaf() {
		kids := make([]*node[T], 0, len(*left.children)+len(*right.children))
		kids = append(kids, *left.children...)
		kids = append(kids, *right.children...)
		for j := a + 1; j < len(*left.children); j++ {
			(*left.children)[j] = nil
		}
		*left.children = append((*left.children)[:0], kids[:a+1]...)
		*right.children = append(make([]*node[T], 0, tr.max+1), kids[a+1:]...)
	}
	left.updateCount()
	right.updateCount()
}
