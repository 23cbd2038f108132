package raftlog

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// The store's write pattern (every batch sets the HardState beside new
// log entries; a snapshot's truncation range-deletes the old ones) makes
// every flushed L0 file overlap every other. With the store's L0
// thresholds L0 compacts about once per 17 such flushes (10 in 174);
// at Pebble's default threshold of 4 it compacted 77 times in the same
// 174, rewriting entries the truncation then drops.
func TestLogFlushesAreNotCompactedEachTime(t *testing.T) {
	opts := pebbleOptions(quietLogger())
	opts.MemTableSize = 256 << 10
	db, err := pebble.Open(t.TempDir(), opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()

	val := make([]byte, 400)
	idx := uint64(0)
	for flush := range 40 {
		for range 600 { // about one memtable of entries
			b := db.NewBatch()
			for range 4 {
				idx++
				require.NoError(t, b.Set(logKey(idx), val, nil))
			}
			require.NoError(t, b.Set(keyHardState, val[:16], nil))
			require.NoError(t, b.Commit(pebble.NoSync))
		}
		if flush%4 == 3 { // a snapshot truncates the log behind it
			require.NoError(t, db.DeleteRange(logPrefix, logKey(idx-1000), pebble.NoSync))
		}
	}
	require.NoError(t, db.Flush())
	m := db.Metrics()
	require.GreaterOrEqual(t, m.Flush.Count, int64(100), "the test did not flush")
	require.LessOrEqual(t, m.Compact.DefaultCount*8, m.Flush.Count, "L0 compacted %d times in %d flushes", m.Compact.DefaultCount, m.Flush.Count)
}
