package zk

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
	"github.com/corral-dev/corral/roles/controller/zk/watch"
)

// handle runs one request and queues its reply. A non-nil error ends
// the connection: bad input, or a write whose outcome is unknown (the
// client then sees ConnectionLoss, never a success that did not commit).
func (c *conn) handle(req jute.Request) error {
	h := req.Header
	c.srv.met.countOp(h.Type)
	var (
		resp jute.Record
		err  error
	)
	// A request that sets a watch holds this connection's watch events
	// until its reply is queued: a client registers its watcher when it
	// reads the reply, and drops an event for a path it does not watch
	// yet, so an event that overtook the reply would be lost and the
	// client would wait forever (a lock recipe's wait on its predecessor).
	if b, ok := req.Body.(*jute.PathWatchRequest); (ok && b.Watch) || h.Type == jute.OpAddWatch {
		c.holdEvents()
		defer c.releaseEvents()
	}
	switch b := req.Body.(type) {
	case *jute.Empty:
		switch h.Type {
		case jute.OpPing:
			resp = &jute.Empty{}
		case jute.OpCloseSession:
			return c.closeSession(h.Xid)
		case jute.OpWhoAmI:
			resp = c.whoAmI()
		}
	case *jute.AuthPacket:
		return c.setAuth(h.Xid, b)
	case *jute.SetWatchesRequest:
		return c.setWatches(h.Xid, b)
	case *jute.PathWatchRequest:
		switch h.Type {
		case jute.OpExists:
			resp, err = c.exists(b)
		case jute.OpGetData:
			resp, err = c.getData(b)
		case jute.OpGetChildren, jute.OpGetChildren2:
			resp, err = c.getChildren(b, h.Type == jute.OpGetChildren2)
		}
	case *jute.PathRequest:
		switch h.Type {
		case jute.OpGetACL:
			resp, err = c.getACL(b.Path)
		case jute.OpSync:
			resp, err = c.sync(b.Path)
		case jute.OpGetAllChildrenNumber:
			resp, err = c.getAllChildrenNumber(b.Path)
		case jute.OpGetEphemerals:
			resp = c.getEphemerals(b.Path)
		}
	case *jute.PathVersionRequest:
		if h.Type == jute.OpCheck {
			resp, err = c.check(b)
		} else {
			resp, err = c.delete(b)
		}
	case *jute.CreateRequest:
		resp, err = c.create(h.Type, b.Path, b.Data, b.ACL, b.Flags, 0)
	case *jute.CreateTTLRequest:
		resp, err = c.create(h.Type, b.Path, b.Data, b.ACL, b.Flags, b.TTL)
	case *jute.SetDataRequest:
		resp, err = c.setData(b)
	case *jute.SetACLRequest:
		resp, err = c.setACL(b)
	case *jute.MultiRequest:
		resp, err = c.multi(h.Type, b)
	case *jute.AddWatchRequest:
		resp, err = c.addWatch(b)
	case *jute.WatchesRequest:
		resp, err = c.watchesOp(h.Type, b)
	}
	var code jute.Code
	switch {
	case errors.As(err, &code):
	case err != nil:
		return fmt.Errorf("%v (xid %d): %w", h.Type, h.Xid, err)
	case resp == nil:
		// A body type this switch does not expect for the op: a bug here,
		// answered as ZooKeeper answers what it does not implement.
		code = jute.CodeUnimplemented
	}
	if hook := c.srv.beforeReply.Load(); hook != nil {
		(*hook)(req)
	}
	c.reply(h.Xid, code, resp)
	return nil
}

// codeOf maps a refusal from the state machine to ZooKeeper's code.
func codeOf(err error) jute.Code {
	switch {
	case err == nil:
		return jute.CodeOK
	case errors.Is(err, metadata.ErrZNodeNoNode):
		return jute.CodeNoNode
	case errors.Is(err, metadata.ErrZNodeExists):
		return jute.CodeNodeExists
	case errors.Is(err, metadata.ErrZNodeBadVersion):
		return jute.CodeBadVersion
	case errors.Is(err, metadata.ErrZNodeNotEmpty):
		return jute.CodeNotEmpty
	case errors.Is(err, metadata.ErrZNodeNoChildrenForEphemerals):
		return jute.CodeNoChildrenForEphemerals
	case errors.Is(err, metadata.ErrZNodeSessionExpired):
		return jute.CodeSessionExpired
	case errors.Is(err, metadata.ErrZNodeSessionMoved):
		return jute.CodeSessionMoved
	case errors.Is(err, metadata.ErrZNodeBadArguments), errors.Is(err, metadata.ErrZNodeTooLarge):
		return jute.CodeBadArguments
	case errors.Is(err, metadata.ErrZNodeInvalidACL):
		return jute.CodeInvalidACL
	case errors.Is(err, metadata.ErrZNodeTooMany):
		return jute.CodeQuotaExceeded
	}
	var code jute.Code
	if errors.As(err, &code) {
		return code
	}
	return jute.CodeSystemError
}

// checkPath refuses what is not a ZooKeeper path (BadArguments).
func checkPath(p string) error {
	if metadata.ValidateZNodePath(p) != nil {
		return jute.CodeBadArguments
	}
	return nil
}

// addWatch registers a watch for this connection. Beyond the
// per-connection limit the connection ends: the limit guards the
// server's memory, and a client that needs more is misbehaving.
func (c *conn) watch(path string, k watch.Kind) error {
	if err := c.srv.watches.Add(c.id, path, k); err != nil {
		c.srv.met.refused.WithLabelValues("watch_limit").Inc()
		return fmt.Errorf("watch %s: %w (limit %d)", path, err, c.srv.cfg.MaxWatchesPerConn)
	}
	c.srv.met.watches.Set(float64(c.srv.watches.Count()))
	return nil
}

// seen makes sure the watch events of the change a reply shows are
// queued before the reply (see Server.waitFired). It cannot ask whether
// this connection had a watch: a one-shot watch leaves the registry
// before its event is queued.
func (c *conn) seen(zxid int64) {
	if zxid > 0 {
		c.srv.waitFired(zxid)
	}
}

func (c *conn) seenNode(n metadata.ZNodeInfo) {
	c.seen(max(n.Stat.Czxid, n.Stat.Mzxid, n.Stat.Pzxid))
}
