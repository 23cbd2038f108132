package raftlog

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// buildStore writes a store with every kind of record: entries 3..6 after a
// compaction to 2, a snapshot at 3, a HardState, a ConfState and metadata.
func buildStore(t *testing.T, dir string) {
	t.Helper()
	s := openTest(t, dir)
	require.NoError(t, s.Save(hardState(2, 1, 5), termEnts(1, 1, 1, 2, 2, 2, 2), nil, true))
	require.NoError(t, s.SetMeta("cluster_id", "c-1"))
	_, err := s.CreateSnapshot(3, &pb.ConfState{Voters: []uint64{1, 2, 3}}, []byte("state machine"))
	require.NoError(t, err)
	require.NoError(t, s.Compact(2))
	require.NoError(t, s.Close())
}

// withRawDB opens the store's Pebble directly, bypassing every check.
func withRawDB(t *testing.T, dir string, f func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(dir, pebbleOptions(quietLogger()))
	require.NoError(t, err)
	f(db)
	require.NoError(t, db.Close())
}

func rawGet(t *testing.T, db *pebble.DB, key []byte) []byte {
	t.Helper()
	v, closer, err := db.Get(key)
	require.NoError(t, err)
	v = append([]byte(nil), v...)
	require.NoError(t, closer.Close())
	return v
}

// requireCorruptOpen asserts Open fails with ErrCorrupt, naming what.
func requireCorruptOpen(t *testing.T, dir string, what string) {
	t.Helper()
	s, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err == nil {
		_ = s.Close()
		t.Fatalf("Open served a damaged store (%s)", what)
	}
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), what)
	require.Contains(t, err.Error(), "restore the data directory")
	t.Logf("Open: %v", err)
}

func TestCorruptRecordDetectedAtOpen(t *testing.T) {
	flip := func(key []byte) func(*testing.T, *pebble.DB) {
		return func(t *testing.T, db *pebble.DB) {
			v := rawGet(t, db, key)
			v[len(v)-1] ^= 0x40 // payload byte; the stored CRC stays as it was
			require.NoError(t, db.Set(key, v, pebble.Sync))
		}
	}
	cases := []struct {
		name, what string
		damage     func(*testing.T, *pebble.DB)
	}{
		{"entry payload", "log entry 4: checksum mismatch", flip(logKey(4))},
		{"hard state", `"r/hs": checksum mismatch`, flip(keyHardState)},
		{"truncated state", `"r/trunc": checksum mismatch`, flip(keyTrunc)},
		{"snapshot metadata", `"r/snapmeta": checksum mismatch`, flip(keySnapMeta)},
		{"snapshot file record", `"r/snapfile": checksum mismatch`, flip(keySnapFile)},
		{"conf state", `"r/cs": checksum mismatch`, flip(keyConfState)},
		{"metadata", `"m/cluster_id": checksum mismatch`, flip(metaKey("cluster_id"))},
		{"entry under another index", "log entry 5: checksum mismatch", func(t *testing.T, db *pebble.DB) {
			require.NoError(t, db.Set(logKey(5), rawGet(t, db, logKey(4)), pebble.Sync))
		}},
		{"truncated record", "log entry 3: record too short", func(t *testing.T, db *pebble.DB) {
			require.NoError(t, db.Set(logKey(3), []byte{1, 2}, pebble.Sync))
		}},
		{"unknown version", "log entry 3: unknown record version 9", func(t *testing.T, db *pebble.DB) {
			v := rawGet(t, db, logKey(3))
			v[0] = 9
			require.NoError(t, db.Set(logKey(3), v, pebble.Sync))
		}},
		{"gap", "log entries 4..4 are missing", func(t *testing.T, db *pebble.DB) {
			require.NoError(t, db.Delete(logKey(4), pebble.Sync))
		}},
		{"lost tail below commit", "commit index 5 is beyond last log index 4", func(t *testing.T, db *pebble.DB) {
			require.NoError(t, db.DeleteRange(logKey(5), logPrefixEnd, pebble.Sync))
		}},
		{"stale entry below truncation", "log entry 2 survives below the truncated index 2", func(t *testing.T, db *pebble.DB) {
			val, err := encodeProtoRecord(logKey(2), ent(2, 1, "old"))
			require.NoError(t, err)
			require.NoError(t, db.Set(logKey(2), val, pebble.Sync))
		}},
		{"malformed log key", "malformed log key", func(t *testing.T, db *pebble.DB) {
			require.NoError(t, db.Set([]byte("r/log/x"), encodeRecord([]byte("r/log/x"), nil), pebble.Sync))
		}},
		{"term regression", "log entry 6 has term 1, lower than the preceding term 2", func(t *testing.T, db *pebble.DB) {
			val, err := encodeProtoRecord(logKey(6), ent(6, 1, "x"))
			require.NoError(t, err)
			require.NoError(t, db.Set(logKey(6), val, pebble.Sync))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			buildStore(t, dir)
			withRawDB(t, dir, func(db *pebble.DB) { tc.damage(t, db) })
			requireCorruptOpen(t, dir, tc.what)
		})
	}
}

// TestCorruptionDetectedOnRead damages an entry behind an open store's back
// (white box) and checks that reads served from Pebble report it.
func TestCorruptionDetectedOnRead(t *testing.T) {
	s := openTest(t, t.TempDir(), withCache(1))
	require.NoError(t, s.Save(hardState(1, 1, 0), termEnts(1, 1, 1, 1, 1), nil, true))
	v := rawGet(t, s.db, logKey(2))
	v[len(v)-1] ^= 1
	require.NoError(t, s.db.Set(logKey(2), v, pebble.Sync))

	_, err := s.Entries(1, 4, math.MaxUint64)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "log entry 2: checksum mismatch")
	_, err = s.Term(2)
	require.ErrorIs(t, err, ErrCorrupt)
	require.NotErrorIs(t, err, raft.ErrUnavailable, "raft must not mistake corruption for a sentinel")

	require.NoError(t, s.db.Delete(logKey(3), pebble.Sync))
	_, err = s.Entries(3, 4, math.MaxUint64)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "log entry 3 is missing")
}

// pebbleFiles lists dir's files whose names end in suffix, largest first.
func pebbleFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	var sizes = map[string]int64{}
	for _, de := range des {
		info, err := de.Info()
		require.NoError(t, err)
		if strings.HasSuffix(de.Name(), suffix) || strings.HasPrefix(de.Name(), suffix) {
			if info.Size() > 0 {
				p := filepath.Join(dir, de.Name())
				out = append(out, p)
				sizes[p] = info.Size()
			}
		}
	}
	for i := range out { // tiny list: selection sort by size, largest first
		for j := i + 1; j < len(out); j++ {
			if sizes[out[j]] > sizes[out[i]] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// writeBulk fills a store with enough incompressible entries to span many
// Pebble blocks, optionally flushing them into an sstable.
func writeBulk(t *testing.T, dir string, flush bool) {
	t.Helper()
	s := openTest(t, dir, func(o *Options) { o.NoSync = false })
	rnd := rand.New(rand.NewPCG(1, 2))
	const n = 600
	for lo := uint64(1); lo <= n; lo += 100 {
		batch := termEnts(lo, make([]uint64, 100)...)
		for _, e := range batch {
			e.Term = new(uint64(1))
			e.Data = make([]byte, 400)
			for k := range e.Data {
				e.Data[k] = byte(rnd.Uint32())
			}
		}
		require.NoError(t, s.Save(hardState(1, 1, lo-1), batch, nil, true))
	}
	if flush {
		require.NoError(t, s.db.Flush())
	}
	require.NoError(t, s.Close())
}

// flipBytes damages a file at a few offsets spread over its middle.
func flipBytes(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, frac := range []int{3, 4, 5} { // 30%, 40%, 50% into the file
		b[len(b)*frac/10] ^= 0xff
	}
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

func TestDamagedPebbleFiles(t *testing.T) {
	for _, tc := range []struct {
		name, suffix string
		flush        bool
	}{
		{"sstable", ".sst", true},
		{"wal", ".log", false},
		{"manifest", "MANIFEST-", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeBulk(t, dir, tc.flush)
			files := pebbleFiles(t, dir, tc.suffix)
			require.NotEmpty(t, files, "no %s file in %s", tc.suffix, dir)
			flipBytes(t, files[0])
			s, err := Open(Options{Dir: dir, Logger: quietLogger()})
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open served a store with a damaged %s", tc.name)
			}
			require.ErrorIs(t, err, ErrCorrupt)
			t.Logf("Open: %v", err)
		})
	}
}

// TestTruncatedWAL cuts the WAL short, which is indistinguishable from a
// crash during a write: Pebble replays the intact prefix. The store must
// either refuse to open with a clear error or open in a valid state holding
// a prefix of the writes; it must never panic or serve a broken log.
func TestTruncatedWAL(t *testing.T) {
	dir := t.TempDir()
	writeBulk(t, dir, false)
	files := pebbleFiles(t, dir, ".log")
	require.NotEmpty(t, files)
	info, err := os.Stat(files[0])
	require.NoError(t, err)
	require.NoError(t, os.Truncate(files[0], info.Size()/2))

	s, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err != nil {
		require.ErrorContains(t, err, "open raft log")
		t.Logf("Open refused: %v", err)
		return
	}
	defer func() { _ = s.Close() }()
	last, err := s.LastIndex()
	require.NoError(t, err)
	hs, _, err := s.InitialState()
	require.NoError(t, err)
	require.LessOrEqual(t, hs.GetCommit(), last)
	if last > 0 {
		all, err := s.Entries(1, last+1, math.MaxUint64)
		require.NoError(t, err)
		require.Len(t, all, int(last))
	}
	t.Logf("Open recovered a prefix: last index %d, commit %d", last, hs.GetCommit())
}
