package zk

import (
	"errors"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// Writes check the ACL against this controller's state (which may lag
// the leader a little), then propose; only a committed, applied result is
// answered.

// propose runs one write. A refusal by the state machine is its code; a
// failure whose outcome is unknown (timeout, lost leadership) is an
// error, which ends the connection. So does SessionMoved: as ZooKeeper,
// the connection the session left gets no answer, only closed
// (its client is elsewhere already).
func (c *conn) propose(op metadata.Op, payload any) (metadata.Result, error) {
	ctx, cancel := c.srv.timeoutCtx(c.srv.cfg.ProposeTimeout)
	defer cancel()
	res, err := c.proposeFrom(ctx, op, payload)
	if err != nil {
		return res, fmt.Errorf("%w: %v", errUnknownOutcome, err)
	}
	if errors.Is(res.Err, metadata.ErrZNodeSessionMoved) {
		c.srv.met.refused.WithLabelValues("session_moved").Inc()
		return res, fmt.Errorf("%w: %v", errSessionMoved, res.Err)
	}
	var top int64
	for _, ev := range res.ZNodeEvents {
		top = max(top, ev.Zxid)
	}
	c.seen(top)
	return res, nil
}

// proposeZNode runs one znode write whose result is a ZNodeResult: a
// refusal by the state machine comes back as its ZooKeeper code.
func (c *conn) proposeZNode(what string, op metadata.Op, payload any) (metadata.ZNodeResult, error) {
	res, err := c.propose(op, payload)
	if err != nil {
		return metadata.ZNodeResult{}, err
	}
	if res.Err != nil {
		return metadata.ZNodeResult{}, codeOf(res.Err)
	}
	out, ok := res.Out.(metadata.ZNodeResult)
	if !ok {
		return metadata.ZNodeResult{}, fmt.Errorf("%s: unexpected result %T", what, res.Out)
	}
	return out, nil
}

// fresh returns the node at p, asking for a linearizable read first when
// this controller does not have it: another session may have created it
// a moment ago through another controller.
func (c *conn) fresh(p string) (metadata.ZNodeInfo, bool, error) {
	return readFresh(c, p, c.srv.lookup)
}

// may checks perm on the node at p, NoNode if it is missing (as fresh,
// after a linearizable read); it reads the ACL only, not the node's data.
func (c *conn) may(p string, perm int32) error {
	acl, ok, err := readFresh(c, p, c.srv.acl)
	switch {
	case err != nil:
		return err
	case !ok:
		return jute.CodeNoNode
	case !checkACL(acl, perm, c.authIDs()):
		return jute.CodeNoAuth
	}
	return nil
}

// readFresh returns get(p), asking for a linearizable read first when
// this controller does not have p (fresh says why).
func readFresh[T any](c *conn, p string, get func(string) (T, bool)) (T, bool, error) {
	if v, ok := get(p); ok {
		return v, true, nil
	}
	ctx, cancel := c.srv.timeoutCtx(c.srv.cfg.ProposeTimeout)
	defer cancel()
	if err := c.srv.b.LinearizableRead(ctx); err != nil {
		var zero T
		return zero, false, fmt.Errorf("read %s: %w", p, err)
	}
	v, ok := get(p)
	return v, ok, nil
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// buildCreate checks a create request and turns it into its payload.
// inMulti: the parent may come from an earlier op of the same multi, so a
// missing parent is left to the state machine.
func (c *conn) buildCreate(op jute.Op, path string, data []byte, acl []jute.ACL, flags int32, ttl int64, inMulti bool) (*metadata.ZNodeCreate, error) {
	p := &metadata.ZNodeCreate{Path: path, Data: data}
	switch flags {
	case jute.FlagPersistent:
	case jute.FlagEphemeral:
		p.Ephemeral = true
	case jute.FlagPersistentSequential:
		p.Sequential = true
	case jute.FlagEphemeralSequential:
		p.Ephemeral, p.Sequential = true, true
	case jute.FlagContainer:
		p.Container = true
	case jute.FlagPersistentWithTTL, jute.FlagPersistentSequentialWithTTL:
		if c.srv.cfg.DisableExtendedTypes {
			return nil, jute.CodeUnimplemented
		}
		p.Sequential = flags == jute.FlagPersistentSequentialWithTTL
		p.TTLMS = ttl
		if ttl <= 0 || ttl > metadata.MaxZNodeTTLMS {
			return nil, jute.CodeBadArguments
		}
	default:
		return nil, jute.CodeBadArguments
	}
	if (op == jute.OpCreateTTL) != (p.TTLMS > 0) || (op == jute.OpCreateContainer && !p.Container) {
		return nil, jute.CodeBadArguments
	}
	check := path
	if p.Sequential {
		check += "1"
	}
	if err := checkPath(check); err != nil {
		return nil, err
	}
	if underZK(path) {
		return nil, virtualWrite(path, !p.Sequential)
	}
	if p.Ephemeral {
		p.Session = c.sessionID()
	}
	parent := parentOf(path)
	if underZK(parent) {
		return nil, virtualWrite(path, false)
	}
	var pn metadata.ZNodeInfo
	var ok bool
	if inMulti {
		pn, ok = c.srv.lookup(parent)
	} else {
		var err error
		if pn, ok, err = c.fresh(parent); err != nil {
			return nil, err
		}
		if !ok {
			return nil, jute.CodeNoNode
		}
	}
	if ok && !checkACL(pn.ACL, jute.PermCreate, c.authIDs()) {
		return nil, jute.CodeNoAuth
	}
	stored, err := fixACL(acl, c.authIDs())
	if err != nil {
		return nil, err
	}
	p.ACL = stored
	p.AtMS = c.srv.b.Now().UnixMilli()
	return p, nil
}

// createResponse is a create's answer: the path for create, the path and
// Stat for create2, createContainer and createTTL.
func createResponse(op jute.Op, _ *metadata.ZNodeCreate, r metadata.ZNodeResult) jute.Record {
	if op == jute.OpCreate {
		return &jute.PathResponse{Path: r.Path}
	}
	return &jute.Create2Response{Path: r.Path, Stat: toStat(r.Stat)}
}

func (c *conn) create(op jute.Op, path string, data []byte, acl []jute.ACL, flags int32, ttl int64) (jute.Record, error) {
	p, err := c.buildCreate(op, path, data, acl, flags, ttl, false)
	if err != nil {
		return nil, err
	}
	r, err := c.proposeZNode("create", metadata.OpZNodeCreate, p)
	if err != nil {
		return nil, err
	}
	return createResponse(op, p, r), nil
}

// buildDelete checks a delete (DELETE on the parent).
func (c *conn) buildDelete(r *jute.PathVersionRequest, inMulti bool) (*metadata.ZNodeDelete, error) {
	if err := checkPath(r.Path); err != nil {
		return nil, err
	}
	if r.Path == "/" {
		return nil, jute.CodeBadArguments
	}
	if underZK(r.Path) {
		return nil, virtualWrite(r.Path, false)
	}
	if !inMulti {
		if _, ok, err := c.fresh(r.Path); err != nil {
			return nil, err
		} else if !ok {
			return nil, jute.CodeNoNode
		}
	}
	if pn, ok := c.srv.lookup(parentOf(r.Path)); ok && !checkACL(pn.ACL, jute.PermDelete, c.authIDs()) {
		return nil, jute.CodeNoAuth
	}
	return &metadata.ZNodeDelete{Path: r.Path, Version: r.Version}, nil
}

func (c *conn) delete(r *jute.PathVersionRequest) (jute.Record, error) {
	p, err := c.buildDelete(r, false)
	if err != nil {
		return nil, err
	}
	res, err := c.propose(metadata.OpZNodeDelete, p)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, codeOf(res.Err)
	}
	return &jute.Empty{}, nil
}

// buildSetData checks a setData (WRITE on the node).
func (c *conn) buildSetData(r *jute.SetDataRequest, inMulti bool) (*metadata.ZNodeSetData, error) {
	if err := checkPath(r.Path); err != nil {
		return nil, err
	}
	if underZK(r.Path) {
		return nil, virtualWrite(r.Path, false)
	}
	if inMulti {
		if n, ok := c.srv.lookup(r.Path); ok && !checkACL(n.ACL, jute.PermWrite, c.authIDs()) {
			return nil, jute.CodeNoAuth
		}
	} else if err := c.may(r.Path, jute.PermWrite); err != nil {
		return nil, err
	}
	return &metadata.ZNodeSetData{Path: r.Path, Data: r.Data, Version: r.Version, AtMS: c.srv.b.Now().UnixMilli()}, nil
}

func (c *conn) setData(r *jute.SetDataRequest) (jute.Record, error) {
	p, err := c.buildSetData(r, false)
	if err != nil {
		return nil, err
	}
	out, err := c.proposeZNode("setData", metadata.OpZNodeSetData, p)
	if err != nil {
		return nil, err
	}
	return &jute.StatResponse{Stat: toStat(out.Stat)}, nil
}

// setACL needs ADMIN on the node.
func (c *conn) setACL(r *jute.SetACLRequest) (jute.Record, error) {
	if err := checkPath(r.Path); err != nil {
		return nil, err
	}
	if underZK(r.Path) {
		return nil, virtualWrite(r.Path, false)
	}
	if err := c.may(r.Path, jute.PermAdmin); err != nil {
		return nil, err
	}
	acl, err := fixACL(r.ACL, c.authIDs())
	if err != nil {
		return nil, err
	}
	out, err := c.proposeZNode("setACL", metadata.OpZNodeSetACL, metadata.ZNodeSetACL{Path: r.Path, ACL: acl, Version: r.Version})
	if err != nil {
		return nil, err
	}
	return &jute.StatResponse{Stat: toStat(out.Stat)}, nil
}

// closeSession ends the session: its lease is revoked, which deletes its
// ephemeral nodes, then the reply goes and the connection closes.
func (c *conn) closeSession(xid int32) error {
	sid := c.sessionID()
	res, err := c.propose(metadata.OpLeaseRevoke, metadata.LeaseRevokePayload{IDs: []int64{sid}})
	if err != nil {
		return err
	}
	if res.Err != nil && !errors.Is(res.Err, metadata.ErrLeaseNotFound) {
		return fmt.Errorf("close session %s: %w", hexID(sid), res.Err)
	}
	c.srv.log.Info("zk: session closed", "remote", c.remote, "session", hexID(sid))
	for _, o := range c.srv.connsOf(sid) {
		if o != c {
			o.close("session closed")
		}
	}
	c.reply(xid, jute.CodeOK, &jute.Empty{})
	return c.finish()
}
