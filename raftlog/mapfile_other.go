//go:build !linux

package raftlog

import "os"

// mapFile reads the file at path into memory: mapping is only used on
// Linux, where corral runs in production (mapfile_linux.go).
func mapFile(path string) (data []byte, unmap func(), err error) {
	b, err := os.ReadFile(path)
	return b, func() {}, err
}
