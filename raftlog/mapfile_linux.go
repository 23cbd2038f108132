package raftlog

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the file at path read-only and returns its bytes and the
// function that unmaps them. A controller restarting with a million keys
// spent most of a second in os.ReadFile of its 280 MB snapshot: the read
// faults in as much fresh anonymous memory, and the checksum then runs over
// pages touched for the first time. The mapping shares the page cache's
// pages instead, and MAP_POPULATE maps them all in one call.
//
// Writing to the returned bytes faults. If the file is truncated while it
// is mapped, reading past its new end raises SIGBUS, which stops the
// process: snapshot files are only ever written whole under a temporary
// name and renamed, so only something outside corral can do that.
func mapFile(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 || size != int64(int(size)) {
		// mmap refuses a zero length; let the reader report what is wrong.
		b, err := os.ReadFile(path)
		return b, func() {}, err
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
