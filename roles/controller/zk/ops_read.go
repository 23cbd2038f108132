package zk

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
	"github.com/corral-dev/corral/roles/controller/zk/watch"
)

// Reads answer from this controller's applied state. A watch is
// registered before the read whose answer the client gets, so a change
// applied between the two fires it rather than slipping through.

func (c *conn) exists(r *jute.PathWatchRequest) (jute.Record, error) {
	if err := checkPath(r.Path); err != nil {
		return nil, err
	}
	// exists needs no permission (ZooKeeper), and its watch stays
	// whether or not the node exists.
	if r.Watch {
		if err := c.watch(r.Path, watch.Exist); err != nil {
			return nil, err
		}
	}
	n, ok := c.srv.lookup(r.Path)
	if !ok {
		return nil, jute.CodeNoNode
	}
	c.seenNode(n)
	return &jute.StatResponse{Stat: nodeStat(n)}, nil
}

// readable returns the node at p if it exists and the session may read
// it.
func (c *conn) readable(p string) (metadata.ZNodeInfo, error) {
	if err := checkPath(p); err != nil {
		return metadata.ZNodeInfo{}, err
	}
	n, ok := c.srv.lookup(p)
	if !ok {
		return n, jute.CodeNoNode
	}
	if !checkACL(n.ACL, jute.PermRead, c.authIDs()) {
		return n, jute.CodeNoAuth
	}
	return n, nil
}

// watchThenRead arms watch k on p, then reads p again: the answer is at
// least as new as the watch. A node gone meanwhile gets no watch.
func (c *conn) watchThenRead(p string, k watch.Kind, wt int32) (metadata.ZNodeInfo, error) {
	if err := c.watch(p, k); err != nil {
		return metadata.ZNodeInfo{}, err
	}
	n, ok := c.srv.lookup(p)
	if !ok {
		c.srv.watches.Remove(c.id, p, wt)
		return n, jute.CodeNoNode
	}
	return n, nil
}

func (c *conn) getData(r *jute.PathWatchRequest) (jute.Record, error) {
	n, err := c.readable(r.Path)
	if err != nil {
		return nil, err
	}
	if r.Watch {
		if n, err = c.watchThenRead(r.Path, watch.Data, watch.TypeData); err != nil {
			return nil, err
		}
	}
	c.seenNode(n)
	return &jute.GetDataResponse{Data: n.Data, Stat: nodeStat(n)}, nil
}

func (c *conn) getChildren(r *jute.PathWatchRequest, two bool) (jute.Record, error) {
	n, err := c.readable(r.Path)
	if err != nil {
		return nil, err
	}
	if r.Watch {
		if n, err = c.watchThenRead(r.Path, watch.Child, watch.TypeChildren); err != nil {
			return nil, err
		}
	}
	kids, ok := c.srv.children(r.Path)
	if !ok {
		return nil, jute.CodeNoNode
	}
	c.seenNode(n)
	if two {
		st := nodeStat(n)
		st.NumChildren = int32(len(kids))
		return &jute.GetChildren2Response{Children: kids, Stat: st}, nil
	}
	return &jute.StringsResponse{Strings: kids}, nil
}

func (c *conn) getAllChildrenNumber(p string) (jute.Record, error) {
	if _, err := c.readable(p); err != nil {
		return nil, err
	}
	n := c.srv.allChildrenNumber(p)
	if n < 0 {
		return nil, jute.CodeNoNode
	}
	return &jute.Int32Response{Value: int32(n)}, nil
}

// getEphemerals lists the session's ephemeral nodes whose path starts
// with prefix ("/" for all), a plain string prefix as in ZooKeeper.
func (c *conn) getEphemerals(prefix string) jute.Record {
	all := c.srv.b.State().EphemeralsOf(c.sessionID())
	out := make([]string, 0, len(all))
	for _, p := range all {
		if prefix == "/" || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return &jute.StringsResponse{Strings: out}
}

// getACL needs READ or ADMIN (ZooKeeper 3.x); without ADMIN the digest
// hashes are hidden.
func (c *conn) getACL(p string) (jute.Record, error) {
	if err := checkPath(p); err != nil {
		return nil, err
	}
	n, ok := c.srv.lookup(p)
	if !ok {
		return nil, jute.CodeNoNode
	}
	ids := c.authIDs()
	admin := checkACL(n.ACL, jute.PermAdmin, ids)
	if !admin && !checkACL(n.ACL, jute.PermRead, ids) {
		return nil, jute.CodeNoAuth
	}
	return &jute.GetACLResponse{ACL: toJuteACL(n.ACL, !admin), Stat: nodeStat(n)}, nil
}

// check outside a multi (op 13), as current ZooKeeper answers it: the
// node's Stat if it is at the version, needing READ.
func (c *conn) check(r *jute.PathVersionRequest) (jute.Record, error) {
	n, err := c.readable(r.Path)
	if err != nil {
		return nil, err
	}
	if r.Version != -1 && r.Version != n.Stat.Version {
		return nil, jute.CodeBadVersion
	}
	return &jute.StatResponse{Stat: nodeStat(n)}, nil
}

// sync returns once this controller applied every write committed before
// it. A failure (no leader) ends the connection: the client sees
// ConnectionLoss and retries elsewhere.
func (c *conn) sync(p string) (jute.Record, error) {
	ctx, cancel := c.srv.timeoutCtx(min(c.srv.cfg.ProposeTimeout, c.timeout))
	defer cancel()
	if err := c.srv.b.LinearizableRead(ctx); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	return &jute.PathResponse{Path: p}, nil
}

func (c *conn) addWatch(r *jute.AddWatchRequest) (jute.Record, error) {
	if err := checkPath(r.Path); err != nil {
		return nil, err
	}
	k := watch.Persistent
	switch r.Mode {
	case jute.AddWatchPersistent:
	case jute.AddWatchPersistentRecursive:
		k = watch.PersistentRecursive
	default:
		return nil, jute.CodeBadArguments
	}
	if err := c.watch(r.Path, k); err != nil {
		return nil, err
	}
	return &jute.Int32Response{}, nil
}

// watchesOp is checkWatches and removeWatches: NoWatcher when the
// connection has no watch of that type on the path.
func (c *conn) watchesOp(op jute.Op, r *jute.WatchesRequest) (jute.Record, error) {
	if err := checkPath(r.Path); err != nil {
		return nil, err
	}
	if r.Type < jute.WatcherChildren || r.Type > jute.WatcherPersistentRecursive {
		return nil, jute.CodeBadArguments
	}
	var ok bool
	if op == jute.OpRemoveWatches {
		ok = c.srv.watches.Remove(c.id, r.Path, r.Type)
		c.srv.met.watches.Set(float64(c.srv.watches.Count()))
	} else {
		ok = c.srv.watches.Check(c.id, r.Path, r.Type)
	}
	if !ok {
		return nil, jute.CodeNoWatcher
	}
	return &jute.Empty{}, nil
}

// setWatches re-arms a reconnected client's watches; those whose node
// changed since relativeZxid fire at once, before the reply.
func (c *conn) setWatches(xid int32, r *jute.SetWatchesRequest) error {
	ds, err := c.srv.watches.Rearm(c.id, r.RelativeZxid, watch.SetWatches{
		Data: r.DataWatches, Exist: r.ExistWatches, Child: r.ChildWatches,
		Persistent: r.PersistentWatches, PersistentRecursive: r.PersistentRecursiveWatches,
	}, func(p string) (metadata.ZNodeStat, bool) {
		n, ok := c.srv.lookup(p)
		return n.Stat, ok
	})
	c.srv.deliver(ds)
	c.srv.met.watches.Set(float64(c.srv.watches.Count()))
	if err != nil {
		c.srv.met.refused.WithLabelValues("watch_limit").Inc()
		return fmt.Errorf("setWatches: %w (limit %d)", err, c.srv.cfg.MaxWatchesPerConn)
	}
	c.reply(xid, jute.CodeOK, &jute.Empty{})
	return nil
}
