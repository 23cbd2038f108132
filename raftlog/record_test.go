package raftlog

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
)

// appendProtoRecord into a reused buffer gives encodeProtoRecord's bytes,
// whatever the buffer held before, and the entries read back; and saving
// a batch of entries no longer allocates two copies of each.
func TestAppendProtoRecordReusesItsBuffer(t *testing.T) {
	var buf []byte
	for i, data := range []string{"a longer payload than the next", "", "b"} {
		e := ent(uint64(i+1), 1, data)
		key := logKey(e.GetIndex())
		want, err := encodeProtoRecord(key, e)
		require.NoError(t, err)
		buf, err = appendProtoRecord(buf, key, e)
		require.NoError(t, err)
		require.Equal(t, want, buf)
		var back pb.Entry
		require.NoError(t, decodeProtoRecord(key, buf, &back))
		require.Equal(t, e.GetData(), back.GetData())
	}

	s := openTest(t, t.TempDir())
	payload := make([]byte, 4096)
	batch := func(lo uint64) []*pb.Entry {
		out := make([]*pb.Entry, 64)
		for i := range out {
			out[i] = &pb.Entry{Index: new(lo + uint64(i)), Term: new(uint64(1)), Type: pb.EntryNormal.Enum(), Data: payload}
		}
		return out
	}
	next := uint64(1)
	require.NoError(t, s.Save(nil, batch(next), nil, false))
	next += 64
	// The least of twenty Saves: TotalAlloc counts the runtime's and
	// Pebble's background work too, and under the race detector
	// sync.Pool drops a quarter of what is put back, Pebble's pooled
	// batch among it (all five of an earlier five-Save version once
	// allocated a batch of their own in CI).
	least := uint64(1 << 62)
	for range 20 {
		b := batch(next)
		next += 64
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		require.NoError(t, s.Save(nil, b, nil, false))
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("a 64-entry Save of 4 KiB entries allocated %d bytes", least)
	// Two copies of each entry were 64 × 2 × 4 KiB = 512 KiB a batch.
	require.Less(t, least, uint64(256<<10), fmt.Sprintf("a 64-entry Save allocated %d bytes", least))
}
