package metadata

import (
	"fmt"
	"testing"
)

// Per-stage benchmarks of a put (issue 21, item 6): the command's
// encoding (done once per proposal, before raft) and its apply (done on
// every controller, per committed entry). The other stages are in
// raftlog/, roles/controller/api/ and roles/controller/.

// BenchmarkStageProposeEncode is the proposal's encoding: the put's
// Command (256-byte value) marshalled into the raft entry's data.
func BenchmarkStageProposeEncode(b *testing.B) {
	val := make([]byte, 256)
	b.ReportAllocs()
	var id uint64
	var n int
	for b.Loop() {
		id++
		cmd := &Command{ID: id, Op: OpPut, Key: "bench/key/00000042", Value: val}
		n = len(cmd.Marshal())
	}
	b.ReportMetric(float64(n), "entry-bytes")
}

// BenchmarkStageApplyPut is metadata.State.Apply of one committed put
// (256-byte value) over 1,000 keys, decoding included: per entry, on
// every controller.
func BenchmarkStageApplyPut(b *testing.B) {
	const keys = 1000
	entries := make([][]byte, keys)
	for i := range entries {
		entries[i] = (&Command{ID: uint64(i + 1), Op: OpPut, Key: fmt.Sprintf("bench/key/%08d", i), Value: make([]byte, 256)}).Marshal()
	}
	s := New()
	b.ReportAllocs()
	var index uint64
	for b.Loop() {
		index++
		if _, res := s.Apply(index, entries[index%keys]); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}
