package raftlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// waitTimeout bounds every wait in these tests; reaching it is a failure,
// never the expected path.
const waitTimeout = 20 * time.Second

// snapFiles lists the snapshot directory of the store in dir.
func snapFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, snapDirName))
	require.NoError(t, err)
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestCreateSnapshotWritesDataOutsideWriteLock blocks CreateSnapshot between
// its file write and its metadata commit and shows that the raft loop's Save
// (and readers) proceed meanwhile: the data write does not hold wmu.
func TestCreateSnapshotWritesDataOutsideWriteLock(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.NoError(t, s.Save(hardState(1, 1, 5), ents(1, 5, 1), nil, true))

	written, release := make(chan struct{}), make(chan struct{})
	s.testHookSnapWritten = func() {
		close(written)
		<-release
	}
	type result struct {
		snap *pb.Snapshot
		err  error
	}
	created := make(chan result, 1)
	go func() {
		snap, err := s.CreateSnapshot(4, nil, []byte("snap-4"))
		created <- result{snap, err}
	}()
	waitFor(t, written, "the snapshot file write")
	require.Equal(t, []string{snapFileName(4, 1)}, snapFiles(t, dir), "the file is written before the hook")

	saved := make(chan struct{})
	var saveErr error
	go func() {
		defer close(saved)
		saveErr = s.Save(hardState(1, 1, 6), ents(6, 7, 1), nil, true)
	}()
	select {
	case <-saved:
	case <-time.After(waitTimeout):
		close(release)
		t.Fatal("Save waited for CreateSnapshot's data write: wmu is held during it")
	}
	require.NoError(t, saveErr)
	// Readers still see the previous (empty) snapshot: nothing is published yet.
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.True(t, raft.IsEmptySnap(snap))

	close(release)
	var r result
	select {
	case r = <-created:
	case <-time.After(waitTimeout):
		t.Fatal("CreateSnapshot did not finish")
	}
	require.NoError(t, r.err)
	require.Equal(t, uint64(4), r.snap.GetMetadata().GetIndex())
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, uint64(4), snap.GetMetadata().GetIndex())
	require.Equal(t, "snap-4", string(snap.GetData()))
	last, err := s.LastIndex()
	require.NoError(t, err)
	require.Equal(t, uint64(7), last)
}

// TestCreateSnapshotReplacesFiles checks that exactly one data file, the
// current one, survives a sequence of snapshots, that an out-of-date request
// writes none, and that a reopened store serves the latest.
func TestCreateSnapshotReplacesFiles(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.NoError(t, s.Save(hardState(1, 1, 9), ents(1, 9, 1), nil, true))
	for _, i := range []uint64{2, 5, 9} {
		_, err := s.CreateSnapshot(i, nil, fmt.Appendf(nil, "snap-%d", i))
		require.NoError(t, err)
		require.Equal(t, []string{snapFileName(i, 1)}, snapFiles(t, dir))
	}
	_, err := s.CreateSnapshot(9, nil, []byte("again"))
	require.ErrorIs(t, err, raft.ErrSnapOutOfDate)
	_, err = s.CreateSnapshot(10, nil, []byte("beyond"))
	require.ErrorIs(t, err, raft.ErrUnavailable)
	require.Equal(t, []string{snapFileName(9, 1)}, snapFiles(t, dir), "rejected snapshots leave no file")
	require.NoError(t, s.Close())

	s = openTest(t, dir)
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, uint64(9), snap.GetMetadata().GetIndex())
	require.Equal(t, "snap-9", string(snap.GetData()))
}

// TestSnapFileCrashLeftovers simulates crashes while a snapshot is written:
// a .tmp (crash during the write) and a complete file the metadata never
// named (crash before the commit). Open removes both and keeps serving the
// previous snapshot.
func TestSnapFileCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	buildStore(t, dir) // snapshot at 3, term 2
	cur := snapFileName(3, 2)
	require.Equal(t, []string{cur}, snapFiles(t, dir))

	header, trailer, _ := encodeSnapFile(5, 2, []byte("never committed"))
	orphan := filepath.Join(dir, snapDirName, snapFileName(5, 2))
	require.NoError(t, os.WriteFile(orphan, slices.Concat(header, []byte("never committed"), trailer), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, snapDirName, snapFileName(6, 2)+snapTmpExt), []byte("half"), 0o600))

	s := openTest(t, dir)
	require.Equal(t, []string{cur}, snapFiles(t, dir), "leftovers must be removed at Open")
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, uint64(3), snap.GetMetadata().GetIndex())
	require.Equal(t, "state machine", string(snap.GetData()))
}

// TestDamagedSnapFileDetectedAtOpen damages the current data file in the
// ways a disk or an operator can; Open must refuse with ErrCorrupt.
func TestDamagedSnapFileDetectedAtOpen(t *testing.T) {
	path := func(dir string) string { return filepath.Join(dir, snapDirName, snapFileName(3, 2)) }
	cases := []struct {
		name, what string
		damage     func(t *testing.T, dir string)
	}{
		{"truncated", "truncated or extended", func(t *testing.T, dir string) {
			info, err := os.Stat(path(dir))
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path(dir), info.Size()-3))
		}},
		{"cut to a partial header", "shorter than its header", func(t *testing.T, dir string) {
			require.NoError(t, os.Truncate(path(dir), 10))
		}},
		{"bit flip in data", "checksum mismatch", func(t *testing.T, dir string) {
			b, err := os.ReadFile(path(dir))
			require.NoError(t, err)
			b[snapHeaderLen+2] ^= 0x08
			require.NoError(t, os.WriteFile(path(dir), b, 0o600))
		}},
		{"bit flip in header", "checksum mismatch", func(t *testing.T, dir string) {
			b, err := os.ReadFile(path(dir))
			require.NoError(t, err)
			b[12] ^= 0x01 // index field: the length still matches, the CRC does not
			require.NoError(t, os.WriteFile(path(dir), b, 0o600))
		}},
		{"missing", filepath.Join(snapDirName, snapFileName(3, 2)) + " is missing", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(path(dir)))
		}},
		{"another snapshot's file", "metadata wants 3 term 2", func(t *testing.T, dir string) {
			header, trailer, _ := encodeSnapFile(3, 2, []byte("other state"))
			require.NoError(t, os.WriteFile(path(dir), slices.Concat(header, []byte("other state"), trailer), 0o600))
		}},
		{"file record without metadata match", "snapshot file record names snapshot 3 term 2", func(t *testing.T, dir string) {
			withRawDB(t, dir, func(db *pebble.DB) {
				val, err := encodeProtoRecord(keySnapMeta, &pb.SnapshotMetadata{Index: new(uint64(4)), Term: new(uint64(2)),
					ConfState: &pb.ConfState{Voters: []uint64{1}}})
				require.NoError(t, err)
				require.NoError(t, db.Set(keySnapMeta, val, pebble.Sync))
			})
		}},
		{"no data at all", "snapshot 3 has no data", func(t *testing.T, dir string) {
			withRawDB(t, dir, func(db *pebble.DB) { require.NoError(t, db.Delete(keySnapFile, pebble.Sync)) })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			buildStore(t, dir)
			tc.damage(t, dir)
			requireCorruptOpen(t, dir, tc.what)
		})
	}
}

// writeInlineSnapshot turns the store in dir into what an earlier version
// wrote: the snapshot's data inline in Pebble under keySnapData and no file.
func writeInlineSnapshot(t *testing.T, dir string, meta *pb.SnapshotMetadata, data []byte) {
	t.Helper()
	withRawDB(t, dir, func(db *pebble.DB) {
		b := db.NewBatch()
		val, err := encodeProtoRecord(keySnapMeta, meta)
		require.NoError(t, err)
		require.NoError(t, b.Set(keySnapMeta, val, nil))
		require.NoError(t, b.Set(keySnapData, encodeRecord(keySnapData, data), nil))
		require.NoError(t, putConfState(b, meta.GetConfState()))
		require.NoError(t, b.Delete(keySnapFile, nil))
		require.NoError(t, b.Commit(pebble.Sync))
	})
	files, err := filepath.Glob(filepath.Join(dir, snapDirName, "*"))
	require.NoError(t, err)
	for _, f := range files {
		require.NoError(t, os.Remove(f))
	}
}

// TestInlineSnapshotCompat opens a store whose snapshot data is inline in
// Pebble (written before snapshot files), serves it, detects its damage, and
// moves to a file on the next CreateSnapshot.
func TestInlineSnapshotCompat(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.NoError(t, s.Save(hardState(1, 1, 6), ents(1, 6, 1), nil, true))
	require.NoError(t, s.Close())
	meta := &pb.SnapshotMetadata{Index: new(uint64(3)), Term: new(uint64(1)), ConfState: &pb.ConfState{Voters: []uint64{1, 2}}}
	writeInlineSnapshot(t, dir, meta, []byte("snap-3"))

	s = openTest(t, dir)
	require.Empty(t, snapFiles(t, dir))
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, uint64(3), snap.GetMetadata().GetIndex())
	require.Equal(t, "snap-3", string(snap.GetData()))
	_, cs, err := s.InitialState()
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2}, cs.GetVoters())

	_, err = s.CreateSnapshot(5, nil, []byte("snap-5"))
	require.NoError(t, err)
	require.Equal(t, []string{snapFileName(5, 1)}, snapFiles(t, dir))
	_, closer, err := s.db.Get(keySnapData)
	if err == nil {
		_ = closer.Close()
	}
	require.ErrorIs(t, err, pebble.ErrNotFound, "the inline blob is deleted with the move to files")
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, "snap-5", string(snap.GetData()))
	require.Equal(t, []uint64{1, 2}, snap.GetMetadata().GetConfState().GetVoters())
	require.NoError(t, s.Close())

	s = openTest(t, dir)
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, uint64(5), snap.GetMetadata().GetIndex())
	require.Equal(t, "snap-5", string(snap.GetData()))
	require.NoError(t, s.Close())

	// A damaged inline blob is still found at Open.
	writeInlineSnapshot(t, dir, meta, []byte("snap-3"))
	withRawDB(t, dir, func(db *pebble.DB) {
		v := rawGet(t, db, keySnapData)
		v[len(v)-1] ^= 0x40
		require.NoError(t, db.Set(keySnapData, v, pebble.Sync))
	})
	requireCorruptOpen(t, dir, `"r/snapdata": checksum mismatch`)
}

// TestSnapshotConsistentDuringCreateSnapshot reads Snapshot() while another
// goroutine keeps creating (and the log keeps compacting behind) snapshots
// whose data names their index: every read must pair metadata and data of
// the same snapshot, and never lose its file to the removal of stale ones.
// Run it with -race.
func TestSnapshotConsistentDuringCreateSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	data := func(i uint64) []byte { return fmt.Appendf(nil, "snap-%d-%s", i, strings.Repeat("x", int(i%512))) }
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 4)
	for range 3 {
		wg.Go(func() {
			for !stop.Load() {
				snap, err := s.Snapshot()
				if err != nil {
					errs <- err
					return
				}
				reads.Add(1)
				i := snap.GetMetadata().GetIndex()
				if i == 0 && len(snap.GetData()) == 0 {
					continue
				}
				if string(snap.GetData()) != string(data(i)) {
					errs <- fmt.Errorf("snapshot %d carries data %.20q", i, snap.GetData())
					return
				}
			}
		})
	}
	next := uint64(1)
	for round := range 150 {
		require.NoError(t, s.Save(hardState(1, 1, next+1), ents(next, next+1, 1), nil, false))
		next += 2
		_, err := s.CreateSnapshot(next-1, nil, data(next-1))
		require.NoError(t, err)
		if round%5 == 4 {
			require.NoError(t, s.Compact(next-2))
		}
	}
	// Let readers observe the final snapshot too before stopping.
	for deadline := time.Now().Add(waitTimeout); reads.Load() < 300 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Len(t, snapFiles(t, dir), 1)
	t.Logf("%d consistent reads", reads.Load())
}

// TestSaveIncomingSnapshotWritesFile installs leader snapshots via Save: the
// data goes to a file named by the metadata, served before and after a
// reopen; a newer one replaces it; a rejected Save leaves no file behind.
func TestSaveIncomingSnapshotWritesFile(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.NoError(t, s.Save(hardState(2, 1, 10), nil, snapshot(10, 2, []uint64{1, 2, 3}, "leader state 10"), true))
	require.Equal(t, []string{snapFileName(10, 2)}, snapFiles(t, dir))
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, "leader state 10", string(snap.GetData()))
	require.NoError(t, s.Close())

	s = openTest(t, dir)
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, uint64(10), snap.GetMetadata().GetIndex())
	require.Equal(t, uint64(2), snap.GetMetadata().GetTerm())
	require.Equal(t, "leader state 10", string(snap.GetData()))
	first, err := s.FirstIndex()
	require.NoError(t, err)
	require.Equal(t, uint64(11), first)

	// Rejected: the HardState would commit beyond the new last index.
	err = s.Save(hardState(3, 1, 30), nil, snapshot(20, 3, []uint64{1, 2, 3}, "leader state 20"), true)
	require.ErrorContains(t, err, "beyond last index")
	require.Equal(t, []string{snapFileName(10, 2)}, snapFiles(t, dir), "a rejected Save leaves no file")
	err = s.Save(nil, nil, snapshot(10, 2, []uint64{1, 2, 3}, "again"), true)
	require.ErrorIs(t, err, raft.ErrSnapOutOfDate)

	require.NoError(t, s.Save(hardState(3, 1, 20), ents(21, 22, 3), snapshot(20, 3, []uint64{1, 2, 3}, "leader state 20"), true))
	require.Equal(t, []string{snapFileName(20, 3)}, snapFiles(t, dir))
	require.NoError(t, s.Close())
	s = openTest(t, dir)
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, "leader state 20", string(snap.GetData()))
	last, err := s.LastIndex()
	require.NoError(t, err)
	require.Equal(t, uint64(22), last)
}

// TestBootstrapWritesEmptySnapFile: the bootstrap snapshot has a (empty)
// data file like every other, and the store reopens with it.
func TestBootstrapWritesEmptySnapFile(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.NoError(t, s.Bootstrap([]uint64{1, 2, 3}))
	require.Equal(t, []string{snapFileName(bootstrapIndex, bootstrapTerm)}, snapFiles(t, dir))
	require.NoError(t, s.Close())
	s = openTest(t, dir)
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, uint64(bootstrapIndex), snap.GetMetadata().GetIndex())
	require.Empty(t, snap.GetData())
}

// TestCreateSnapshotOnClosedStoreDropsFile closes the store while
// CreateSnapshot is between its file write and its commit: the call fails
// with ErrClosed and removes the file it wrote.
func TestCreateSnapshotOnClosedStoreDropsFile(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.NoError(t, s.Save(hardState(1, 1, 3), ents(1, 3, 1), nil, true))
	s.testHookSnapWritten = func() { require.NoError(t, s.Close()) }
	_, err := s.CreateSnapshot(2, nil, []byte("late"))
	require.True(t, errors.Is(err, ErrClosed), "got %v", err)
	require.Empty(t, snapFiles(t, dir))
}

// Open verifies the snapshot's data file by reading it, and the first
// Snapshot() (the controller's, at start) takes that data instead of
// reading and checksumming the file again; later calls read the file.
func TestOpenReadsTheSnapshotFileOnce(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	data := []byte(strings.Repeat("snapshot data ", 1000))
	require.NoError(t, s.Save(hardState(1, 1, 10), ents(1, 10, 1), nil, true))
	_, err := s.CreateSnapshot(10, &pb.ConfState{Voters: []uint64{1}}, data)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openTest(t, dir)
	require.Equal(t, int64(1), s.snapFileReads.Load(), "Open verifies the file")
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, data, snap.GetData())
	require.Equal(t, uint64(10), snap.GetMetadata().GetIndex())
	require.Equal(t, int64(1), s.snapFileReads.Load(), "the first Snapshot() reuses what Open read")
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, data, snap.GetData())
	require.Equal(t, int64(2), s.snapFileReads.Load(), "later calls read the file")
}

// The data the first Snapshot() hands out is the mapping Open made, which
// the controller's state keeps slices of for good: closing the store must
// not unmap it (reading it after Close would fault and stop the test
// binary), and a snapshot taken before anyone asked replaces it.
func TestOpenedSnapshotOutlivesTheStore(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	data := []byte(strings.Repeat("mapped snapshot ", 4096))
	require.NoError(t, s.Save(hardState(1, 1, 20), ents(1, 20, 1), nil, true))
	_, err := s.CreateSnapshot(10, &pb.ConfState{Voters: []uint64{1}}, data)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openTest(t, dir)
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, data, snap.GetData(), "still readable after Close")

	// Not taken before a newer snapshot: the newer one is read, and the
	// mapping Open made is released (Close has nothing left to unmap).
	s = openTest(t, dir)
	newer := []byte(strings.Repeat("newer snapshot ", 4096))
	_, err = s.CreateSnapshot(20, &pb.ConfState{Voters: []uint64{1}}, newer)
	require.NoError(t, err)
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, newer, snap.GetData())
	require.Nil(t, s.opened)
}

// CreateSnapshotFrom streams the data into the file; a writer that fails,
// or writes another length than it announced, leaves no file and no
// snapshot behind.
func TestCreateSnapshotFromStreams(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	require.NoError(t, s.Save(hardState(1, 1, 30), ents(1, 30, 1), nil, true))
	cs := &pb.ConfState{Voters: []uint64{1}}
	data := []byte(strings.Repeat("streamed ", 300000)) // several write buffers

	_, err := s.CreateSnapshotFrom(10, cs, int64(len(data)), func(w io.Writer) error {
		_, err := w.Write(data[:100])
		return err
	})
	require.ErrorContains(t, err, "header says")
	_, err = s.CreateSnapshotFrom(10, cs, int64(len(data)), func(w io.Writer) error {
		return errors.New("encoder failed")
	})
	require.ErrorContains(t, err, "encoder failed")
	require.Empty(t, snapFiles(t, dir))
	snap, err := s.Snapshot()
	require.NoError(t, err)
	require.True(t, raft.IsEmptySnap(snap))

	meta, err := s.CreateSnapshotFrom(10, cs, int64(len(data)), func(w io.Writer) error {
		for p := data; len(p) > 0; p = p[min(len(p), 7000):] {
			if _, err := w.Write(p[:min(len(p), 7000)]); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, uint64(10), meta.GetIndex())
	require.NoError(t, s.Close())
	s = openTest(t, dir) // Open checks the file's CRC
	snap, err = s.Snapshot()
	require.NoError(t, err)
	require.Equal(t, data, snap.GetData())
}
