package raftlog

import (
	"encoding/binary"
	"fmt"
)

// Key layout. Raft state lives under "r/", node metadata under "m/". Log
// indexes are 8-byte big-endian so that byte order equals numeric order and
// every iterator can be bounded to exactly the log keys: an unbounded iterator
// over a mixed keyspace is how other raft-on-Pebble stores ended up decoding
// non-log keys as entries.
var (
	keyHardState = []byte("r/hs")
	keyTrunc     = []byte("r/trunc")
	keySnapMeta  = []byte("r/snapmeta")
	keySnapData  = []byte("r/snapdata")
	keyConfState = []byte("r/cs")

	logPrefix = []byte("r/log/")
	// logPrefixEnd is the smallest key greater than every log key ('0' is
	// '/'+1), used as the exclusive upper bound of log iterators and deletes.
	logPrefixEnd = []byte("r/log0")
)

const (
	metaPrefix = "m/"
	logKeyLen  = 6 + 8 // len(logPrefix) + big-endian index
)

// logKey returns the key of log entry i.
func logKey(i uint64) []byte {
	k := make([]byte, logKeyLen)
	copy(k, logPrefix)
	binary.BigEndian.PutUint64(k[len(logPrefix):], i)
	return k
}

// parseLogKey extracts the index from a log key. It is used on keys read
// from disk, so a malformed key is reported (as corruption) rather than
// trusted.
func parseLogKey(k []byte) (uint64, error) {
	if len(k) != logKeyLen || string(k[:len(logPrefix)]) != string(logPrefix) {
		return 0, fmt.Errorf("%w: malformed log key %q", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[len(logPrefix):]), nil
}

// metaKey returns the key of node metadata item name.
func metaKey(name string) []byte {
	return []byte(metaPrefix + name)
}

// describeKey renders a key for error messages: log keys by index, the rest
// verbatim (they are ASCII).
func describeKey(k []byte) string {
	if len(k) == logKeyLen && string(k[:len(logPrefix)]) == string(logPrefix) {
		return fmt.Sprintf("log entry %d", binary.BigEndian.Uint64(k[len(logPrefix):]))
	}
	return fmt.Sprintf("record %q", k)
}
