package watch

import "github.com/corral-dev/corral/metadata"

// Rearm re-registers a reconnecting client's watches, as ZooKeeper's
// DataTree.setWatches does: relZxid is the last zxid the client saw; lookup
// returns the node's stat now (ok=false: missing). It returns the events
// that must fire at once instead of arming.
//
// What changed while the client was away fires now, since no Trigger will
// report it again: a data watch fires NodeDeleted if the node is gone and
// NodeDataChanged if its mzxid is newer than relZxid; an exists watch
// fires NodeCreated if the node exists (ZooKeeper does so whether or not
// it is new); a child watch fires NodeDeleted or, if its pzxid is newer,
// NodeChildrenChanged. Anything else is armed; persistent and recursive
// watches are always armed and fire nothing. Deliveries follow the request
// order, one per (type, path).
//
// lookup runs with the registry locked, so no Trigger slips between a
// check and the arming it decides (the server calls Trigger after the
// change is visible to lookup). lookup must therefore not call the
// Registry, and no one may hold a lock lookup needs while calling Trigger.
//
// When c reaches its limit Rearm still fires what must fire and arms what
// fits, then returns ErrTooMany. It costs time linear in the paths sent,
// duplicates included, so a hostile client sending many pays only for
// them.
func (r *Registry) Rearm(c ConnID, relZxid int64, w SetWatches, lookup func(path string) (metadata.ZNodeStat, bool)) ([]Delivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var (
		out  []Delivery
		seen = make(map[Delivery]struct{})
		err  error
	)
	fire := func(typ int32, path string) {
		d := Delivery{Conn: c, Type: typ, Path: path}
		if _, dup := seen[d]; !dup {
			seen[d] = struct{}{}
			out = append(out, d)
		}
	}
	arm := func(path string, k Kind) {
		if e := r.add(c, path, k); e != nil {
			err = e
		}
	}
	for _, p := range w.Data {
		switch st, ok := lookup(p); {
		case !ok:
			fire(EventNodeDeleted, p)
		case st.Mzxid > relZxid:
			fire(EventNodeDataChanged, p)
		default:
			arm(p, Data)
		}
	}
	for _, p := range w.Exist {
		if _, ok := lookup(p); ok {
			fire(EventNodeCreated, p)
		} else {
			arm(p, Exist)
		}
	}
	for _, p := range w.Child {
		switch st, ok := lookup(p); {
		case !ok:
			fire(EventNodeDeleted, p)
		case st.Pzxid > relZxid:
			fire(EventNodeChildrenChanged, p)
		default:
			arm(p, Child)
		}
	}
	for _, p := range w.Persistent {
		arm(p, Persistent)
	}
	for _, p := range w.PersistentRecursive {
		arm(p, PersistentRecursive)
	}
	return out, err
}
