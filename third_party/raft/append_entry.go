// This file is corral's, not upstream's (see CORRAL.md).

package raft

import pb "go.etcd.io/raft/v3/raftpb"

// appendedEntry is the entry the leader appends for the proposed e: e's
// type and data at the given term and index. Upstream deep-clones e
// (proto.Clone), which copies the data through reflection: at 9,000
// writes/s that was a tenth of what a corral leader allocated. The new
// entry shares e's Data, so a proposer must not change a proposal's data
// once proposed (Propose's callers never do; etcd's proposals are fresh
// buffers too), and e itself is left as it was.
func appendedEntry(e *pb.Entry, term, index uint64) *pb.Entry {
	out := &pb.Entry{Term: new(term), Index: new(index), Data: e.GetData()}
	if e.Type != nil {
		out.Type = new(*e.Type)
	}
	return out
}
