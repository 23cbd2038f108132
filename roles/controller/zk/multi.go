package zk

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// multi runs multi (atomic writes, one proposal) and multiRead (reads,
// each with its own result). Mixing reads and writes ends the
// connection, as ZooKeeper refuses such a request while decoding it.
func (c *conn) multi(op jute.Op, r *jute.MultiRequest) (jute.Record, error) {
	if len(r.Ops) > metadata.MaxZNodeMultiOps {
		return nil, jute.CodeBadArguments
	}
	for _, o := range r.Ops {
		read := o.Type == jute.OpGetData || o.Type == jute.OpGetChildren
		if read != (op == jute.OpMultiRead) {
			return nil, fmt.Errorf("%v holds a %v: reads and writes do not mix", op, o.Type)
		}
	}
	if op == jute.OpMultiRead {
		return c.multiRead(r), nil
	}
	return c.multiWrite(r)
}

func (c *conn) multiRead(r *jute.MultiRequest) jute.Record {
	out := &jute.MultiResponse{Results: make([]jute.MultiResult, 0, len(r.Ops))}
	for _, o := range r.Ops {
		q := o.Req.(*jute.PathWatchRequest)
		var (
			resp jute.Record
			err  error
		)
		// Watch flags inside a multiRead are ignored, as ZooKeeper does.
		if o.Type == jute.OpGetData {
			resp, err = c.getData(&jute.PathWatchRequest{Path: q.Path})
		} else {
			resp, err = c.getChildren(&jute.PathWatchRequest{Path: q.Path}, false)
		}
		if err != nil {
			out.Results = append(out.Results, jute.MultiResult{Type: jute.OpError, Err: codeOf(err)})
			continue
		}
		out.Results = append(out.Results, jute.MultiResult{Type: o.Type, Resp: resp})
	}
	return out
}

// failedMulti is ZooKeeper's answer to a refused multi: every op an
// error, OK before the failing one, RuntimeInconsistency after.
func failedMulti(n, at int, code jute.Code) *jute.MultiResponse {
	out := &jute.MultiResponse{Results: make([]jute.MultiResult, n)}
	for i := range out.Results {
		e := jute.CodeOK
		switch {
		case i == at:
			e = code
		case i > at:
			e = jute.CodeRuntimeInconsistency
		}
		out.Results[i] = jute.MultiResult{Type: jute.OpError, Err: e}
	}
	return out
}

func (c *conn) multiWrite(r *jute.MultiRequest) (jute.Record, error) {
	if len(r.Ops) == 0 {
		return &jute.MultiResponse{}, nil
	}
	ops := make([]metadata.ZNodeOp, len(r.Ops))
	creates := make([]*metadata.ZNodeCreate, len(r.Ops))
	for i, o := range r.Ops {
		var err error
		switch q := o.Req.(type) {
		case *jute.CreateRequest:
			creates[i], err = c.buildCreate(o.Type, q.Path, q.Data, q.ACL, q.Flags, 0, true)
			ops[i].Create = creates[i]
		case *jute.CreateTTLRequest:
			creates[i], err = c.buildCreate(o.Type, q.Path, q.Data, q.ACL, q.Flags, q.TTL, true)
			ops[i].Create = creates[i]
		case *jute.PathVersionRequest:
			if o.Type == jute.OpDelete {
				ops[i].Delete, err = c.buildDelete(q, true)
			} else {
				ops[i].Check, err = c.buildCheck(q)
			}
		case *jute.SetDataRequest:
			ops[i].SetData, err = c.buildSetData(q, true)
		default:
			err = fmt.Errorf("multi op %d: unexpected %T", i, o.Req)
		}
		var code jute.Code
		if errors.As(err, &code) {
			return failedMulti(len(r.Ops), i, code), nil
		}
		if err != nil {
			return nil, err
		}
	}
	res, err := c.propose(metadata.OpZNodeMulti, metadata.ZNodeMulti{Ops: ops})
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		var me *metadata.ZNodeMultiError
		if errors.As(res.Err, &me) && me.Index >= 0 && me.Index < len(r.Ops) {
			return failedMulti(len(r.Ops), me.Index, codeOf(me.Err)), nil
		}
		return nil, codeOf(res.Err)
	}
	outs, ok := res.Out.([]metadata.ZNodeResult)
	if !ok || len(outs) != len(r.Ops) {
		return nil, fmt.Errorf("multi: unexpected result %T", res.Out)
	}
	resp := &jute.MultiResponse{Results: make([]jute.MultiResult, len(r.Ops))}
	for i, o := range r.Ops {
		mr := jute.MultiResult{Type: o.Type}
		switch o.Type {
		case jute.OpCreate:
			mr.Resp = &jute.PathResponse{Path: outs[i].Path}
		case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
			// ZooKeeper reports these as create2 results.
			mr.Type = jute.OpCreate2
			mr.Resp = createResponse(o.Type, creates[i], outs[i])
		case jute.OpSetData:
			mr.Resp = &jute.StatResponse{Stat: toStat(outs[i].Stat)}
		}
		resp.Results[i] = mr
	}
	return resp, nil
}

// buildCheck checks a multi's check (READ on the node, as ZooKeeper).
func (c *conn) buildCheck(r *jute.PathVersionRequest) (*metadata.ZNodeCheck, error) {
	if err := checkPath(r.Path); err != nil {
		return nil, err
	}
	if underZK(r.Path) {
		return nil, jute.CodeBadArguments
	}
	if n, ok := c.srv.lookup(r.Path); ok && !checkACL(n.ACL, jute.PermRead, c.authIDs()) {
		return nil, jute.CodeNoAuth
	}
	return &metadata.ZNodeCheck{Path: r.Path, Version: r.Version}, nil
}
