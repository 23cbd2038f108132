package raftlog

import (
	"context"
	"io"
	"log"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestRaftRestartNodeOnBootstrappedStores proves that Bootstrap produces
// what raft v3.7 expects from a pre-bootstrapped storage: three real
// raft.RestartNode instances on three freshly bootstrapped Stores (no
// StartNode, no ConfChange entries) elect a leader and commit a proposal,
// with messages delivered by hand. It then checks that the committed entry
// survives reopening every store.
func TestRaftRestartNodeOnBootstrappedStores(t *testing.T) {
	ids := []uint64{1, 2, 3}
	base := t.TempDir()
	dirs := make([]string, len(ids))
	stores := make([]*Store, len(ids))
	nodes := make([]raft.Node, len(ids))
	for k, id := range ids {
		dirs[k] = filepath.Join(base, strconv.FormatUint(id, 10))
		stores[k] = openTest(t, dirs[k], func(o *Options) { o.NoSync = false })
		require.NoError(t, stores[k].Bootstrap(ids))
		nodes[k] = raft.RestartNode(&raft.Config{
			ID:              id,
			ElectionTick:    10,
			HeartbeatTick:   1,
			Storage:         stores[k],
			MaxSizePerMsg:   1 << 20,
			MaxInflightMsgs: 256,
			CheckQuorum:     true,
			PreVote:         true,
			Logger:          &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
		})
		t.Cleanup(nodes[k].Stop) // runs before the store's Close (LIFO)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()

	const payload = "hello"
	applied := map[uint64]uint64{} // node id -> index at which payload was applied
	proposed := false
	handle := func(k int, rd raft.Ready) {
		sync := rd.MustSync || !raft.IsEmptySnap(rd.Snapshot)
		require.NoError(t, stores[k].Save(rd.HardState, rd.Entries, rd.Snapshot, sync))
		for _, m := range rd.Messages { // only after the Save above is durable
			require.NoError(t, nodes[m.GetTo()-1].Step(ctx, m))
		}
		for _, e := range rd.CommittedEntries {
			require.Equal(t, pb.EntryNormal, e.GetType(), "bootstrap must not need conf change entries")
			if string(e.GetData()) == payload {
				applied[ids[k]] = e.GetIndex()
			}
		}
		nodes[k].Advance()
		if rd.SoftState != nil && rd.SoftState.RaftState == raft.StateLeader && !proposed {
			proposed = true
			require.NoError(t, nodes[k].Propose(ctx, []byte(payload)))
		}
	}
	for len(applied) < len(ids) {
		select {
		case <-ctx.Done():
			t.Fatalf("no commit on all nodes before the deadline: applied=%v proposed=%v", applied, proposed)
		case <-ticker.C:
			for _, n := range nodes {
				n.Tick()
			}
		case rd := <-nodes[0].Ready():
			handle(0, rd)
		case rd := <-nodes[1].Ready():
			handle(1, rd)
		case rd := <-nodes[2].Ready():
			handle(2, rd)
		}
	}
	idx := applied[1]
	require.Greater(t, idx, uint64(1), "entries start after the bootstrap index")
	for _, n := range nodes {
		n.Stop()
	}

	for k := range ids {
		require.Equal(t, idx, applied[ids[k]])
		s := reopen(t, stores[k], dirs[k], 0)
		hs, cs, err := s.InitialState()
		require.NoError(t, err)
		require.GreaterOrEqual(t, hs.GetCommit(), idx)
		require.Equal(t, ids, cs.GetVoters())
		got, err := s.Entries(idx, idx+1, math.MaxUint64)
		require.NoError(t, err)
		require.Equal(t, payload, string(got[0].GetData()))
	}
}
