package raftlog

import (
	"encoding/json"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/metadata"
)

// ConfContext travels in a ConfChange's Context: who waits for it and
// where the member can be reached. Bootstrap entries carry a bare address.
// It is part of the log's format, so it lives with the log.
type ConfContext struct {
	RequestID uint64 `json:"request_id,omitempty"`
	Address   string `json:"address,omitempty"`
}

// Encode returns the context as stored in a ConfChange.
func (c ConfContext) Encode() []byte {
	b, _ := json.Marshal(c) // two plain fields: cannot fail
	return b
}

// ParseConfContext decodes a ConfChange's context: JSON, or the bare
// address of a bootstrap entry.
func ParseConfContext(b []byte) ConfContext {
	var cc ConfContext
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &cc) == nil {
		return cc
	}
	return ConfContext{Address: string(b)}
}

// MemberChange says what a committed conf change does to the replicated
// member list. The live apply path and offline recovery both use it, so a
// replayed log records exactly what the running controllers recorded.
func MemberChange(cc *pb.ConfChange) (metadata.MemberOp, metadata.Member) {
	ctx := ParseConfContext(cc.GetContext())
	switch cc.GetType() {
	case pb.ConfChangeType_ConfChangeAddNode, pb.ConfChangeType_ConfChangeAddLearnerNode:
		return metadata.MemberAdd, metadata.Member{ID: cc.GetNodeId(), Address: ctx.Address}
	case pb.ConfChangeType_ConfChangeRemoveNode:
		return metadata.MemberRemove, metadata.Member{ID: cc.GetNodeId()}
	default:
		return metadata.MemberUpdate, metadata.Member{ID: cc.GetNodeId()}
	}
}
