package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/metadata"
)

// A write judged on a follower that has not yet applied an ACL change
// (here the bootstrap that closes an open cluster) is refused at apply,
// on every replica: the request's context carries the ACL revision the
// follower judged it at, and the change moved it. Without the fence the
// write would apply, although the leader had already acknowledged the
// bootstrap. A write judged at the current revision applies.
func TestACLFenceRefusesAWriteJudgedBeforeAChange(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	f := mc.others(lead)[0]
	// The follower gets no entries: its ACL state stays as it is.
	mc.net.Hold(func(from uint64, m *pb.Message) bool {
		return from == lead && m.GetTo() == f && m.GetType() == pb.MsgApp
	})
	boot, err := metadata.NewWorkerCommand(metadata.OpACLBootstrap, metadata.ACLBootstrap{Token: metadata.ACLToken{
		AccessorID: "00000000000000aa", SecretSHA256: metadata.ACLSecretHash("root"), Name: "root",
		Type: metadata.ACLTypeManagement, CreatedAtMS: 1}})
	require.NoError(t, err)
	_, err = mc.node(lead).Propose(context.Background(), boot)
	require.NoError(t, err)
	bootRev := mc.node(lead).State().ACLRevision()
	require.NotZero(t, bootRev)

	judged := mc.node(f).State().ACL()
	require.False(t, judged.Bootstrapped, "the follower has not applied the bootstrap")
	answered := make(chan error, 1)
	go func() {
		ctx := metadata.WithACLFence(context.Background(), judged.Revision)
		_, err := mc.node(f).Propose(ctx, &metadata.Command{Op: metadata.OpPut, Key: "k", Value: []byte("judged open")})
		answered <- err
	}()
	// The write reaches the leader, which applies (refuses) it.
	applied := func(id uint64) uint64 { return mc.node(id).State().AppliedIndex() }
	require.Eventually(t, func() bool { return applied(lead) > bootRev }, 5*time.Second, time.Millisecond)
	mc.net.ReleaseHeld()
	select {
	case err := <-answered:
		require.True(t, errors.Is(err, metadata.ErrACLChanged), "got %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the follower never answered")
	}
	for _, id := range mc.ids() {
		require.Eventually(t, func() bool { return applied(id) >= applied(lead) }, 5*time.Second, time.Millisecond)
		_, ok := mc.node(id).State().Get("k")
		require.False(t, ok, "controller %d applied a write judged before the bootstrap", id)
	}

	now := mc.node(f).State().ACL().Revision
	require.Equal(t, bootRev, now)
	_, err = mc.node(f).Propose(metadata.WithACLFence(context.Background(), now),
		&metadata.Command{Op: metadata.OpPut, Key: "k", Value: []byte("judged closed")})
	require.NoError(t, err)
}
