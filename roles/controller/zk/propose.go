package zk

import (
	"context"

	"github.com/corral-dev/corral/metadata"
)

// command encodes a proposal. Creates, deletes and setData go in binary
// (metadata.OpZNodeWrite): they are the hot path, and every controller
// decodes each one on its raft loop. Everything else goes as JSON.
func command(op metadata.Op, payload any) (*metadata.Command, error) {
	switch p := payload.(type) {
	case metadata.ZNodeCreate:
		payload = &p
	case metadata.ZNodeDelete:
		payload = &p
	case metadata.ZNodeSetData:
		payload = &p
	}
	switch op {
	case metadata.OpZNodeCreate, metadata.OpZNodeDelete, metadata.OpZNodeSetData:
		return metadata.NewZNodeWriteCommand(payload)
	}
	return metadata.NewWorkerCommand(op, payload)
}

// proposePayload encodes and proposes one command (Backend.Propose).
func (s *Server) proposePayload(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error) {
	cmd, err := command(op, payload)
	if err != nil {
		return metadata.Result{}, err
	}
	return s.b.Propose(ctx, cmd)
}
