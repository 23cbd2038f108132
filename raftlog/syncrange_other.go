//go:build !linux

package raftlog

import "os"

// startWriteback does nothing where sync_file_range does not exist: the
// final fsync writes the whole file (syncrange_linux.go).
func startWriteback(f *os.File, off, n int64) error { return nil }
