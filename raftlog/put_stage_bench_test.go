package raftlog

import (
	"fmt"
	"io"
	"log"
	"testing"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Per-stage benchmarks of a put (issue 21, item 6): raft's own work per
// Ready and the Pebble batch with fsync. The other stages are in
// metadata/, roles/controller/api/ and roles/controller/
// (put_stage_bench_test.go in each).

// stageEntrySize is about one put's raft entry: a 256-byte value, its key
// and the command's header.
const stageEntrySize = 300

// BenchmarkStagePebbleSave is the raft loop's storage step for one Ready:
// n entries of ~300 bytes plus the HardState in one Pebble batch, fsynced
// (MustSync), on a temp dir. It is what every controller pays before it
// answers MsgApp (followers) or counts itself in the quorum (leader).
func BenchmarkStagePebbleSave(b *testing.B) {
	for _, n := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := openTest(b, b.TempDir(), func(o *Options) { o.NoSync = false })
			data := make([]byte, stageEntrySize)
			next := uint64(1)
			b.ReportAllocs()
			b.SetBytes(int64(n * len(data)))
			for b.Loop() {
				batch := make([]*pb.Entry, n)
				for k := range batch {
					batch[k] = &pb.Entry{Index: new(next), Term: new(uint64(1)), Type: pb.EntryNormal.Enum(), Data: data}
					next++
				}
				if err := s.Save(hardState(1, 1, next-1-uint64(n)), batch, nil, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N*n), "µs/entry")
			b.ReportMetric(float64(n), "entries/fsync")
		})
	}
}

// BenchmarkStageRaftReady is raft's own CPU for a put, without storage
// or network: a single-voter RawNode on MemoryStorage; each op proposes n
// entries of ~300 bytes and runs Ready/Append/Advance cycles until all n
// are committed (the leader's log append, the commit, the committed
// entries handed back).
func BenchmarkStageRaftReady(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			ms := raft.NewMemoryStorage()
			if err := ms.ApplySnapshot(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{
				Index: new(uint64(1)), Term: new(uint64(1)), ConfState: &pb.ConfState{Voters: []uint64{1}}}}); err != nil {
				b.Fatal(err)
			}
			rn, err := raft.NewRawNode(&raft.Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: ms,
				MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
				Logger: &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}})
			if err != nil {
				b.Fatal(err)
			}
			cycle := func() (committed, readys int) {
				for rn.HasReady() {
					rd := rn.Ready()
					readys++
					if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
						if err := ms.SetHardState(rd.HardState); err != nil {
							b.Fatal(err)
						}
					}
					if err := ms.Append(rd.Entries); err != nil {
						b.Fatal(err)
					}
					for _, e := range rd.CommittedEntries {
						if e.GetType() == pb.EntryNormal && len(e.GetData()) > 0 {
							committed++
						}
					}
					rn.Advance(rd)
				}
				return committed, readys
			}
			if err := rn.Campaign(); err != nil {
				b.Fatal(err)
			}
			cycle()
			if rn.Status().RaftState != raft.StateLeader {
				b.Fatal("single voter did not become leader")
			}
			data := make([]byte, stageEntrySize)
			var readys int
			b.ReportAllocs()
			for b.Loop() {
				for range n {
					if err := rn.Propose(data); err != nil {
						b.Fatal(err)
					}
				}
				c, r := cycle()
				if c != n {
					b.Fatalf("committed %d of %d", c, n)
				}
				readys += r
			}
			b.ReportMetric(float64(readys)/float64(b.N), "readys/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N*n), "µs/entry")
		})
	}
}
