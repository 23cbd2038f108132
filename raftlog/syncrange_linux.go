package raftlog

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to write the file's bytes [off, off+n) to
// disk, after waiting for the writeback of any of them already started
// (sync_file_range with WAIT_BEFORE|WRITE): called with off 0, it waits
// for the ranges it started before. It guarantees nothing about
// durability: the final fsync does that. See pacedFile for why.
func startWriteback(f *os.File, off, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE)
}
