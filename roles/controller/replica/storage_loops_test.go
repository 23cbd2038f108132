package replica

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

func ents(term uint64, from, to uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := from; i <= to; i++ {
		out = append(out, &pb.Entry{Index: new(i), Term: new(term)})
	}
	return out
}

func appendMsg(es []*pb.Entry, hs *pb.HardState) *pb.Message {
	m := &pb.Message{Type: pb.MsgStorageAppend.Enum(), Entries: es}
	if hs != nil {
		m.Term, m.Vote, m.Commit = hs.Term, hs.Vote, hs.Commit
	}
	return m
}

func ids(es []*pb.Entry) [][2]uint64 {
	var out [][2]uint64
	for _, e := range es {
		out = append(out, [2]uint64{e.GetIndex(), e.GetTerm()})
	}
	return out
}

// A group of appends is written as raft's log would hold it after each in
// turn: later entries replace earlier ones from their first index on.
func TestMergeAppends(t *testing.T) {
	hs := func(term, vote, commit uint64) *pb.HardState {
		return &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
	}
	cases := []struct {
		name   string
		msgs   []*pb.Message
		want   [][2]uint64
		wantHS *pb.HardState
	}{
		{"one", []*pb.Message{appendMsg(ents(1, 5, 6), nil)}, ids(ents(1, 5, 6)), nil},
		{"following", []*pb.Message{appendMsg(ents(1, 5, 6), hs(1, 1, 4)), appendMsg(ents(1, 7, 8), nil)},
			ids(ents(1, 5, 8)), hs(1, 1, 4)},
		{"overwriting a tail", []*pb.Message{appendMsg(ents(1, 5, 8), nil), appendMsg(ents(2, 7, 7), hs(2, 3, 6))},
			append(ids(ents(1, 5, 6)), ids(ents(2, 7, 7))...), hs(2, 3, 6)},
		{"overwriting all", []*pb.Message{appendMsg(ents(1, 5, 8), nil), appendMsg(ents(2, 3, 4), nil)},
			ids(ents(2, 3, 4)), nil},
		{"hard state only, last wins", []*pb.Message{appendMsg(nil, hs(1, 1, 2)), appendMsg(nil, hs(1, 1, 3))},
			nil, hs(1, 1, 3)},
		{"entries then a commit", []*pb.Message{appendMsg(ents(1, 5, 5), nil), appendMsg(nil, hs(1, 1, 5))},
			ids(ents(1, 5, 5)), hs(1, 1, 5)},
	}
	for _, tc := range cases {
		gotHS, got := mergeAppends(tc.msgs)
		if g, w := ids(got), tc.want; len(g) != len(w) {
			t.Errorf("%s: entries %v, want %v", tc.name, g, w)
		} else {
			for i := range g {
				if g[i] != w[i] {
					t.Errorf("%s: entries %v, want %v", tc.name, g, w)
					break
				}
			}
		}
		if (gotHS == nil) != (tc.wantHS == nil) ||
			gotHS.GetTerm() != tc.wantHS.GetTerm() || gotHS.GetVote() != tc.wantHS.GetVote() || gotHS.GetCommit() != tc.wantHS.GetCommit() {
			t.Errorf("%s: hard state %v, want %v", tc.name, gotHS, tc.wantHS)
		}
	}
}

// The first message's slice is raft's: a merge must not write into it.
func TestMergeAppendsLeavesRaftsSlicesAlone(t *testing.T) {
	first := ents(1, 5, 8)
	backing := first[:4:4]
	mergeAppends([]*pb.Message{appendMsg(first[:2], nil), appendMsg(ents(2, 7, 8), nil)})
	if backing[2].GetTerm() != 1 || backing[3].GetTerm() != 1 {
		t.Fatalf("raft's slice was overwritten: %v", ids(backing))
	}
}

func TestAppendGroupWritesASnapshotAlone(t *testing.T) {
	snap := &pb.Message{Snapshot: &pb.Snapshot{}}
	plain := appendMsg(ents(1, 1, 1), nil)
	for _, tc := range []struct {
		msgs []*pb.Message
		want int
	}{
		{[]*pb.Message{plain}, 1},
		{[]*pb.Message{plain, plain, plain}, 3},
		{[]*pb.Message{plain, plain, snap, plain}, 2},
		{[]*pb.Message{snap, plain}, 1},
	} {
		if got := appendGroup(tc.msgs); got != tc.want {
			t.Errorf("appendGroup of %d messages = %d, want %d", len(tc.msgs), got, tc.want)
		}
	}
}

func TestFIFOKeepsOrderAndSignals(t *testing.T) {
	q := newFIFO[int]()
	for i := range 5 {
		q.push(i)
	}
	<-q.ready // one token for any number of pushes
	got := q.take(nil)
	for i, v := range got {
		if v != i {
			t.Fatalf("take = %v, want 0..4 in order", got)
		}
	}
	if len(got) != 5 || len(q.take(nil)) != 0 {
		t.Fatalf("take = %v, then more", got)
	}
}

// Entries, a new term or vote, and snapshots are synced before raft hears
// they are written; a commit-only HardState is not.
func TestSyncNeeded(t *testing.T) {
	hs := func(term, vote, commit uint64) *pb.HardState {
		return &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
	}
	saved := hs(2, 1, 10)
	for _, tc := range []struct {
		name string
		hs   *pb.HardState
		ents int
		snap bool
		want bool
	}{
		{"entries", nil, 3, false, true},
		{"entries and a commit", hs(2, 1, 12), 1, false, true},
		{"a new term", hs(3, 0, 10), 0, false, true},
		{"a new vote", hs(2, 3, 10), 0, false, true},
		{"a snapshot", nil, 0, true, true},
		{"only the commit index", hs(2, 1, 12), 0, false, false},
		{"nothing", nil, 0, false, false},
	} {
		if got := syncNeeded(tc.hs, saved, tc.ents, tc.snap); got != tc.want {
			t.Errorf("%s: syncNeeded = %t, want %t", tc.name, got, tc.want)
		}
	}
}
