package raftlog

import (
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/corral-dev/corral/metadata"
)

// The live apply path and offline recovery both read conf changes through
// MemberChange; an UpdateNode must never be recorded as an add (offline
// recovery once did).
func TestMemberChange(t *testing.T) {
	t.Parallel()
	ctx := ConfContext{RequestID: 9, Address: "10.0.0.4:7001"}.Encode()
	cases := []struct {
		name string
		cc   *pb.ConfChange
		op   metadata.MemberOp
		want metadata.Member
	}{
		{"add voter with JSON context", confChange(pb.ConfChangeType_ConfChangeAddNode, 4, ctx),
			metadata.MemberAdd, metadata.Member{ID: 4, Address: "10.0.0.4:7001"}},
		{"add learner", confChange(pb.ConfChangeType_ConfChangeAddLearnerNode, 4, ctx),
			metadata.MemberAdd, metadata.Member{ID: 4, Address: "10.0.0.4:7001"}},
		{"bootstrap entry with a bare address", confChange(pb.ConfChangeType_ConfChangeAddNode, 1, []byte("127.0.0.1:7001")),
			metadata.MemberAdd, metadata.Member{ID: 1, Address: "127.0.0.1:7001"}},
		{"remove", confChange(pb.ConfChangeType_ConfChangeRemoveNode, 2, nil),
			metadata.MemberRemove, metadata.Member{ID: 2}},
		{"update is not an add", confChange(pb.ConfChangeType_ConfChangeUpdateNode, 3, ctx),
			metadata.MemberUpdate, metadata.Member{ID: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op, m := MemberChange(tc.cc)
			require.Equal(t, tc.op, op)
			require.Equal(t, tc.want, m)
		})
	}
	require.Equal(t, ConfContext{RequestID: 9, Address: "10.0.0.4:7001"}, ParseConfContext(ctx))
}

func confChange(typ pb.ConfChangeType, id uint64, ctx []byte) *pb.ConfChange {
	return &pb.ConfChange{Type: typ.Enum(), NodeId: proto.Uint64(id), Context: ctx}
}
