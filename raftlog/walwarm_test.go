package raftlog

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// The store's Pebble runs on warmReuseFS, over the operating system's files.
func TestPebbleOptionsWarmRecycledLogs(t *testing.T) {
	opts := pebbleOptions(slog.New(slog.NewTextHandler(io.Discard, nil)))
	fs, ok := opts.FS.(warmReuseFS)
	require.True(t, ok, "Pebble's FS is %T, want warmReuseFS", opts.FS)
	require.Equal(t, vfs.Default, fs.FS)
}

// prefetchFS hands out files that record what was prefetched.
type prefetchFS struct {
	vfs.FS
	got [][2]int64
	err error // what Prefetch returns
}

type prefetchFile struct {
	vfs.File
	fs *prefetchFS
}

func (f prefetchFile) Prefetch(off, n int64) error {
	f.fs.got = append(f.fs.got, [2]int64{off, n})
	return f.fs.err
}

func (fs *prefetchFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return prefetchFile{File: f, fs: fs}, nil
}

func writeFile(t *testing.T, fs vfs.FS, name string, size int) {
	t.Helper()
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, size))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// A recycled log is read from its start when it is taken up, then from
// where the writes are each time they cross a warmStep boundary, never past
// its old size; an empty one is not read.
func TestWarmReuseFSReadsAheadOfTheWrites(t *testing.T) {
	inner := &prefetchFS{FS: vfs.NewMem()}
	fs := warmReuseFS{inner}
	const size = 2*warmAhead + 100
	writeFile(t, inner, "000001.log", size)
	f, err := fs.ReuseForWrite("000001.log", "000004.log", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.Equal(t, [][2]int64{{0, warmAhead}}, inner.got)

	write := func(n int) {
		t.Helper()
		got, err := f.Write(make([]byte, n))
		require.NoError(t, err)
		require.Equal(t, n, got)
	}
	write(warmStep - 10) // short of the first boundary
	require.Len(t, inner.got, 1)
	write(20) // across it
	require.Equal(t, [2]int64{warmStep + 10, warmAhead}, inner.got[1])
	write(3 * warmStep) // across three at once: one read from where it ends
	require.Len(t, inner.got, 3)
	require.Equal(t, [2]int64{4*warmStep + 10, warmAhead}, inner.got[2])
	write(2*warmAhead - 4*warmStep - 10 - 50) // 150 bytes short of the old size
	require.Equal(t, [2]int64{size - 150, 150}, inner.got[3], "not past the old contents")
	write(2 * warmStep) // past them: nothing more to read
	require.Len(t, inner.got, 4)
	require.NoError(t, f.Close())
	data, err := inner.Open("000004.log")
	require.NoError(t, err)
	st, err := data.Stat()
	require.NoError(t, err)
	require.Equal(t, int64(size-150+2*warmStep), st.Size(), "the writes reached the file")
	require.NoError(t, data.Close())

	inner.got = nil
	writeFile(t, inner, "000002.log", 0)
	f, err = fs.ReuseForWrite("000002.log", "000005.log", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	write(2 * warmStep)
	require.NoError(t, f.Close())
	require.Empty(t, inner.got)
}

// A readahead that fails changes nothing else: the file is recycled and
// written all the same. A recycling that fails is reported.
func TestWarmReuseFSErrors(t *testing.T) {
	inner := &prefetchFS{FS: vfs.NewMem(), err: errors.New("no readahead here")}
	fs := warmReuseFS{inner}
	writeFile(t, inner, "000001.log", 3*warmAhead)
	f, err := fs.ReuseForWrite("000001.log", "000004.log", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	n, err := f.Write(make([]byte, 2*warmStep))
	require.NoError(t, err)
	require.Equal(t, 2*warmStep, n)
	require.Len(t, inner.got, 2)
	require.NoError(t, f.Close())
	_, err = inner.Stat("000004.log")
	require.NoError(t, err)

	_, err = fs.ReuseForWrite("missing.log", "000006.log", vfs.WriteCategoryUnspecified)
	require.Error(t, err)
}
