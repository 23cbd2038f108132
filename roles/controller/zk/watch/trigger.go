package watch

import (
	"cmp"
	"slices"
	"strings"

	"github.com/corral-dev/corral/metadata"
)

// Trigger returns the deliveries an applied znode change causes, and
// removes the one-shot watches that fired (persistent ones stay). A
// connection gets one delivery per (type, path) however many of its
// watches match, as ZooKeeper's triggerWatch dedupes by watcher.
// Deliveries are sorted by connection, then event type, then path, so the
// order does not depend on map iteration. It costs the depth of the path
// (only while recursive watches exist) plus the number of matching
// watches.
//
// The rules are DataTree's: created and deleted also tell the parent's
// child watchers (NodeChildrenChanged); recursive watches on the node or
// any ancestor get the node's own event but never NodeChildrenChanged,
// since they already see every descendant's create and delete.
func (r *Registry) Trigger(ev metadata.ZNodeEvent) []Delivery {
	p := ev.Path
	var (
		typ     int32
		oneShot kindBits // kinds on p that fire and are removed
	)
	switch ev.Type {
	case metadata.ZNodeCreated:
		typ, oneShot = EventNodeCreated, bit(Data)|bit(Exist)
	case metadata.ZNodeDeleted:
		typ, oneShot = EventNodeDeleted, bit(Data)|bit(Exist)|bit(Child)
	case metadata.ZNodeDataChanged:
		typ, oneShot = EventNodeDataChanged, bit(Data)|bit(Exist)
	default:
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Delivery
	out = r.fire(out, p, typ, oneShot)
	if typ != EventNodeDataChanged {
		if par, ok := parent(p); ok {
			out = r.fire(out, par, EventNodeChildrenChanged, bit(Child))
		}
	}
	if r.recursive > 0 {
		out = r.fireRecursive(out, p, typ)
	}
	if len(out) < 2 {
		return out
	}
	slices.SortFunc(out, func(a, b Delivery) int {
		if c := cmp.Compare(a.Conn, b.Conn); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return slices.Compact(out)
}

// fire appends event typ on path for the one-shot watches of kinds
// oneShot on path, removing them, and for the Persistent watches on path,
// keeping them. r.mu must be held.
func (r *Registry) fire(out []Delivery, path string, typ int32, oneShot kindBits) []Delivery {
	pw := r.byPath[path]
	if pw == nil {
		return out
	}
	for c := range pw.conns[Persistent-1] {
		out = append(out, Delivery{Conn: c, Type: typ, Path: path})
	}
	fired := len(out)
	for k := Data; k <= Child; k++ {
		if oneShot&bit(k) == 0 {
			continue
		}
		for c := range pw.conns[k-1] {
			out = append(out, Delivery{Conn: c, Type: typ, Path: path})
		}
	}
	// Remove after the loops: del edits the sets being ranged over. A
	// connection listed twice (data and exists) is removed at the first.
	for _, d := range out[fired:] {
		r.del(d.Conn, path, oneShot)
	}
	return out
}

// fireRecursive appends event typ on p for the PersistentRecursive
// watches on p and on each of its ancestors, up to "/". r.mu must be
// held.
func (r *Registry) fireRecursive(out []Delivery, p string, typ int32) []Delivery {
	for at, ok := p, true; ok; at, ok = parent(at) {
		pw := r.byPath[at]
		if pw == nil {
			continue
		}
		for c := range pw.conns[PersistentRecursive-1] {
			out = append(out, Delivery{Conn: c, Type: typ, Path: p})
		}
	}
	return out
}

// parent returns the parent of a znode path, "/" for a top-level node;
// ok is false for "/" (and for anything that is not an absolute path),
// which has none.
func parent(p string) (string, bool) {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0 || p == "/":
		return "", false
	case i == 0:
		return "/", true
	}
	return p[:i], true
}
