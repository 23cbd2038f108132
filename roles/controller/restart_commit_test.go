package controller

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/corral-dev/corral/raftlog"
)

// A controller whose restored state is ahead of its synced commit index
// restarts and catches up. With AsyncStorageWrites the apply loop applies
// an entry as soon as raft knows it committed, while the HardState that
// carries the commit index is still on its way to disk, and a snapshot
// (at every stop, for one) can be written in between; raft then refused
// the applied index at every start, a panic ("applied(6) is out of range
// [prevApplied(5), committed(5)]", seen in
// TestController_WholeClusterRestartElectsTheLowestIDAtOnce about once in
// twenty runs). Here the store is put in that state by hand.
func TestRestartWithStateAheadOfSyncedCommit(t *testing.T) {
	mc := newMemCluster(t, 3, func(c *Config) { c.SnapshotEvery = 1 })
	lead := mc.waitLeader(mc.ids()...)
	for i := range 5 {
		_, err := mc.put(lead, fmt.Sprintf("k%d", i), "v")
		require.NoError(t, err)
	}
	id := mc.others(lead)[0]
	want := mc.node(lead).State().AppliedIndex()
	require.Eventually(t, func() bool { return mc.node(id).State().AppliedIndex() >= want }, 10*time.Second, 5*time.Millisecond)
	mc.stopNode(id)

	store, err := raftlog.Open(raftlog.Options{Dir: filepath.Join(mc.cfgs[id].DataDir, "raft"), NoSync: true})
	require.NoError(t, err)
	snap, err := store.Snapshot()
	require.NoError(t, err)
	first, err := store.FirstIndex()
	require.NoError(t, err)
	hs, _, err := store.InitialState()
	require.NoError(t, err)
	behind := snap.GetMetadata().GetIndex() - 1
	require.GreaterOrEqual(t, behind, first-1, "the log was compacted past the commit index")
	hs = proto.Clone(hs).(*pb.HardState)
	hs.Commit = &behind
	require.NoError(t, store.Save(hs, nil, nil, true))
	require.NoError(t, store.Close())

	mc.start(id) // raft panicked here
	_, err = mc.put(lead, "after", "v")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ok := mc.node(id).State().Get("after")
		return ok
	}, 10*time.Second, 5*time.Millisecond)
}
