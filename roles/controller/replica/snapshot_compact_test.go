package replica

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/raftlog"
)

// A snapshot of a state applied ahead of the synced commit index (see
// raftApplied) compacts the log only up to that commit index: raft refuses
// to start on a log whose first index is past its HardState's commit
// ("state.commit 40 is out of range [90, 100]"). The store is real Pebble,
// the snapshot is writeSnapshot's, and raft is started on the result.
func TestSnapshotNeverCompactsPastTheSyncedCommit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		commit    uint64
		wantFirst uint64
	}{
		{"commit behind the applied index", 40, 41},
		{"commit at the applied index", 100, 91},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const applied, catchUp = 100, 10
			store, err := raftlog.Open(raftlog.Options{Dir: t.TempDir(), NoSync: true,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.NoError(t, err)
			t.Cleanup(func() { _ = store.Close() })
			ents := make([]*pb.Entry, 0, applied)
			for i := uint64(1); i <= applied; i++ {
				ents = append(ents, &pb.Entry{Index: new(i), Term: new(uint64(1)), Type: pb.EntryNormal.Enum()})
			}
			hs := &pb.HardState{Term: new(uint64(1)), Vote: new(uint64(1)), Commit: new(tc.commit)}
			require.NoError(t, store.Save(hs, ents, nil, true))

			st := metadata.New()
			for i := uint64(1); i <= applied; i++ {
				st.ApplyEntry(i, 1, nil)
			}
			cut := st.Cut()
			require.Equal(t, uint64(applied), cut.Index())

			c := &Replica{cfg: Config{SnapshotCatchUp: catchUp}, store: store}
			res := c.writeSnapshot(cut, &pb.ConfState{Voters: []uint64{1}}, time.Now())
			require.NoError(t, res.err)
			require.Equal(t, uint64(applied), res.index)
			first, err := store.FirstIndex()
			require.NoError(t, err)
			require.Equal(t, tc.wantFirst, first)

			require.NotPanics(t, func() {
				_, err = raft.NewRawNode(&raft.Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1,
					Storage: store, Applied: raftApplied(applied, tc.commit),
					MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Logger: &raftLogger{slog.New(slog.NewTextHandler(io.Discard, nil))}})
			})
			require.NoError(t, err)
		})
	}
}
