package zk

import (
	"context"

	"github.com/corral-dev/corral/metadata"
)

// command encodes a proposal. Creates, deletes and setData go in binary
// (metadata.OpZNodeWrite): they are the hot path, and every controller
// decodes each one on its raft loop. Everything else goes as JSON.
func command(op metadata.Op, payload any) (*metadata.Command, error) {
	if w, ok := binaryWrite(op, payload); ok {
		return metadata.NewZNodeWriteCommand(w)
	}
	return metadata.NewWorkerCommand(op, payload)
}

// binaryWrite returns payload as NewZNodeWriteCommand takes it, and
// whether op goes in binary.
func binaryWrite(op metadata.Op, payload any) (any, bool) {
	switch op {
	case metadata.OpZNodeCreate, metadata.OpZNodeDelete, metadata.OpZNodeSetData:
	default:
		return nil, false
	}
	switch p := payload.(type) {
	case metadata.ZNodeCreate:
		return &p, true
	case metadata.ZNodeDelete:
		return &p, true
	case metadata.ZNodeSetData:
		return &p, true
	}
	return payload, true
}

// proposePayload encodes and proposes one command (Backend.Propose).
func (s *Server) proposePayload(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error) {
	cmd, err := command(op, payload)
	if err != nil {
		return metadata.Result{}, err
	}
	return s.b.Propose(ctx, cmd)
}

// proposeFrom proposes a write of this connection's session. A znode write
// goes wrapped with its origin (metadata.OpZNodeFrom), so that the state
// machine refuses it if the session has moved to another connection since
// (ZooKeeper's SessionMoved).
func (c *conn) proposeFrom(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error) {
	o := metadata.ZNodeOrigin{Session: c.sessionID(), Conn: c.owner}
	if w, ok := binaryWrite(op, payload); ok { // the hot path: one buffer
		cmd, err := metadata.NewZNodeFromWriteCommand(o, w)
		if err != nil {
			return metadata.Result{}, err
		}
		return c.srv.b.Propose(ctx, cmd)
	}
	cmd, err := metadata.NewWorkerCommand(op, payload)
	if err != nil {
		return metadata.Result{}, err
	}
	switch cmd.Op {
	case metadata.OpZNodeSetACL, metadata.OpZNodeMulti:
		if cmd, err = metadata.NewZNodeFromCommand(o, cmd); err != nil {
			return metadata.Result{}, err
		}
	}
	return c.srv.b.Propose(ctx, cmd)
}
