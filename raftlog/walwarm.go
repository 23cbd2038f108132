package raftlog

import (
	"github.com/cockroachdb/pebble/v2/vfs"
)

// How far ahead of the log's writes a recycled log is read, and how often
// the window moves: a readahead call every warmStep bytes written, for the
// warmAhead bytes from there. The kernel caps one call at the device's
// readahead window (128 KB by default on many disks), so each asks for no
// more. Pages already cached cost a lookup each.
const (
	warmAhead = 128 << 10
	warmStep  = 16 << 10
)

// warmReuseFS is the file system Pebble runs on: the operating system's,
// except that a write-ahead log file Pebble recycles is read into the page
// cache a little ahead of the writes that overwrite it.
//
// Pebble recycles an obsolete log (renames it and writes over it from the
// start) so that its syncs need not commit a new file size. But it appends
// a few hundred bytes at a time, and a write into a 4 KB block that holds
// old data and is not in the page cache makes the kernel read that block
// first, inside write(2): on the raft log's sync path, once for every 4 KB
// of log. A recycled file's pages are cold whenever the kernel has dropped
// them: after a restart, under memory pressure, or on the virtual machines
// we measure on after a minute without use, when the host's proactive
// reclaim takes them. A one-client write then paid a disk read every few
// writes on each controller (docs/PERFORMANCE.md, "A recycled log read
// before it is written"). Read ahead, the blocks come in before the writes
// reach them.
type warmReuseFS struct {
	vfs.FS
}

// ReuseForWrite recycles oldname as newname and starts reading its first
// blocks; the returned file reads on ahead as it is written.
func (fs warmReuseFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return f, err
	}
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return f, nil // nothing old to read: appends need no reads
	}
	w := &warmFile{File: f, size: st.Size()}
	w.readAhead()
	return w, nil
}

// warmFile is a recycled log that reads ahead of its writes.
type warmFile struct {
	vfs.File
	size int64 // the old contents' size: beyond it there is nothing to read
	off  int64 // bytes written so far (Pebble writes a log in sequence)
}

// Write writes p and, each time the writes cross a warmStep boundary,
// reads ahead from where they are.
func (f *warmFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	before := f.off
	f.off += int64(n)
	if before/warmStep != f.off/warmStep {
		f.readAhead()
	}
	return n, err
}

// readAhead starts reading the old blocks in the window after the writes.
// It only starts the reads: a failed one changes nothing but the speed of
// the writes after it, so its error is dropped.
func (f *warmFile) readAhead() {
	if f.off >= f.size {
		return
	}
	_ = f.File.Prefetch(f.off, min(warmAhead, f.size-f.off))
}
