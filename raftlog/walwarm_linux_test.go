package raftlog

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// On a real disk the recycled log's first blocks are read into the page
// cache when it is taken up, though they had been dropped, and the next
// ones as it is written.
func TestWarmReuseFSReadsTheFileIn(t *testing.T) {
	dir := diskDir(t)
	old, recycled := filepath.Join(dir, "000001.log"), filepath.Join(dir, "000004.log")
	writeFile(t, vfs.Default, old, 4<<20)
	f, err := os.Open(old)
	require.NoError(t, err)
	require.NoError(t, f.Sync()) // dirty pages are not dropped
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
	require.NoError(t, f.Close())
	require.Less(t, cachedFraction(t, old, 0, 4<<20), 0.5, "the file's pages were dropped, so there is something to read in")
	w, err := warmReuseFS{vfs.Default}.ReuseForWrite(old, recycled, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	defer w.Close()
	requireCached(t, recycled, 0, warmAhead)
	_, err = w.Write(make([]byte, warmStep+10))
	require.NoError(t, err)
	requireCached(t, recycled, warmAhead, warmStep)
}

// requireCached waits until the file's bytes [off, off+n) are in the page
// cache: the reads were only started, and nothing tells when they end.
func requireCached(t *testing.T, path string, off, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return cachedFraction(t, path, off, n) == 1 }, 10*time.Second, 5*time.Millisecond,
		"bytes [%d, %d) of the recycled log in the page cache", off, off+n)
}

// diskDir is a directory for the test's files on a file system whose
// pages can be dropped: t.TempDir() unless that is a tmpfs (whose pages
// are the files themselves), then one beside the package's sources.
func diskDir(t *testing.T) string {
	dir := t.TempDir()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	if st.Type != unix.TMPFS_MAGIC {
		return dir
	}
	dir, err := os.MkdirTemp(".", ".walwarm-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// cachedFraction is the share of the pages of the file's bytes [off,
// off+n) in the page cache (mincore(2) over a mapping of them); off is a
// multiple of the page size.
func cachedFraction(t *testing.T, path string, off, n int64) float64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { _ = unix.Munmap(b) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	// x/sys/unix has no wrapper for mincore(2).
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return float64(in) / float64(len(vec))
}
