// This file is corral's, not upstream's (see CORRAL.md).

package raft

import (
	"context"
	"errors"

	pb "go.etcd.io/raft/v3/raftpb"
)

// ProposeBatch proposes that each of data be appended to the log, as
// Propose does for one, in a single MsgProp: the leader appends the
// entries together, in order, and replicates them in one MsgApp per
// follower instead of one per entry. Like Propose it waits until the
// proposal is stepped, and returns ErrProposalDropped when raft refuses
// it (no leader, a leadership transfer under way): then none of the
// entries was appended. A nil return does not mean the entries will
// commit.
func (n *node) ProposeBatch(ctx context.Context, data [][]byte) error {
	if len(data) == 0 {
		return errors.New("raft: ProposeBatch of no entries")
	}
	ents := make([]*pb.Entry, len(data))
	for i, d := range data {
		ents[i] = &pb.Entry{Data: d}
	}
	return n.stepWait(ctx, &pb.Message{Type: pb.MsgProp.Enum(), Entries: ents})
}
