package raftlog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// BenchmarkSave measures one Ready's worth of work: a batch of entries plus
// a HardState, committed with fsync (the raft loop's critical path) and,
// for comparison, without.
func BenchmarkSave(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, n := range []int{1, 64} {
			b.Run(fmt.Sprintf("sync=%v/entries=%d", sync, n), func(b *testing.B) {
				s := openTest(b, b.TempDir(), func(o *Options) { o.NoSync = false })
				data := make([]byte, 256)
				next := uint64(1)
				b.SetBytes(int64(n * len(data)))
				b.ResetTimer()
				for b.Loop() {
					batch := make([]*pb.Entry, n)
					for k := range batch {
						batch[k] = &pb.Entry{Index: new(next), Term: new(uint64(1)), Type: pb.EntryNormal.Enum(), Data: data}
						next++
					}
					require.NoError(b, s.Save(hardState(1, 1, next-1-uint64(n)), batch, nil, sync))
				}
			})
		}
	}
}

// BenchmarkCreateSnapshot is the synced save of a snapshot as large as the
// ZooKeeper benchmark's (30 MB): the store's write lock is held for it, so
// the raft loop's next Save waits that long.
func BenchmarkCreateSnapshot(b *testing.B) {
	s := openTest(b, b.TempDir(), func(o *Options) { o.NoSync = false })
	data := make([]byte, 30<<20)
	next := uint64(1)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		require.NoError(b, s.Save(hardState(1, 1, next), []*pb.Entry{{Index: new(next), Term: new(uint64(1)), Type: pb.EntryNormal.Enum()}}, nil, true))
		_, err := s.CreateSnapshot(next, nil, data)
		require.NoError(b, err)
		next++
	}
}
