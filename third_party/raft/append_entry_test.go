// This file is corral's, not upstream's (see CORRAL.md).

package raft

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestAppendEntrySharesTheProposalsData checks that a leader appends a
// proposal without copying its data, and without touching the proposed
// entry, whose term and index stay unset.
func TestAppendEntrySharesTheProposalsData(t *testing.T) {
	r := newTestRaft(1, 10, 1, newTestMemoryStorage(withPeers(1)))
	r.becomeCandidate()
	r.becomeLeader()
	prop := &pb.Entry{Type: pb.EntryNormal.Enum(), Data: []byte("some data")}
	if err := r.Step(&pb.Message{From: new(uint64(1)), To: new(uint64(1)), Type: pb.MsgProp.Enum(), Entries: []*pb.Entry{prop}}); err != nil {
		t.Fatal(err)
	}
	got := r.raftLog.lastEntryID()
	ents, err := r.raftLog.entries(got.index, noLimit)
	if err != nil || len(ents) != 1 {
		t.Fatalf("entries at %d: %v, %v", got.index, ents, err)
	}
	e := ents[0]
	if string(e.GetData()) != "some data" || &e.GetData()[0] != &prop.Data[0] {
		t.Errorf("appended data %q at %p, proposed at %p: want the proposal's own bytes", e.GetData(), &e.GetData()[0], &prop.Data[0])
	}
	if e.GetTerm() != r.Term || e.GetIndex() != got.index || e.GetType() != pb.EntryNormal {
		t.Errorf("appended entry term %d index %d type %v, want %d, %d, normal", e.GetTerm(), e.GetIndex(), e.GetType(), r.Term, got.index)
	}
	if prop.Term != nil || prop.Index != nil {
		t.Errorf("the proposed entry was changed: term %v index %v", prop.Term, prop.Index)
	}
	if e.Type == prop.Type {
		t.Error("the appended entry shares the proposal's Type pointer")
	}
}
