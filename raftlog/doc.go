// Package raftlog is a durable raft.Storage for go.etcd.io/raft/v3 (v3.7) on
// a single Pebble database.
//
// # Model
//
// The store copies raft.MemoryStorage's model so that its behaviour can be
// checked against MemoryStorage as an oracle: the log is a "dummy" entry (the
// persisted truncated state {index, term}) followed by the entries
// trunc.index+1 .. last. Compact moves the dummy forward; a snapshot received
// from the leader (Save with a snapshot) replaces the whole log by a dummy at
// the snapshot.
//
// # Durability
//
// Every Save is ONE Pebble batch (snapshot, entries, deletion of a stale tail,
// HardState), so a crash can never persist a HardState whose commit index
// points at entries that were not written with it. The batch is synced iff the
// caller asks (Ready.MustSync or a snapshot).
//
// A snapshot's state-machine data is the exception: it is a file in snap/
// (see snapfile.go), written and fsynced before the batch that names it, so
// a crash leaves at worst an unnamed file that Open removes. CreateSnapshot
// writes that file without holding wmu, so the raft loop's Save never waits
// for a large snapshot's write.
//
// # Integrity
//
// Every value is a record carrying a CRC32C over its key, version and payload
// (see record.go). Open validates the whole store (every CRC, log contiguity
// trunc+1..last, non-decreasing terms, hs.Commit <= last) and refuses to serve
// a damaged store with an error wrapping ErrCorrupt; reads re-verify CRCs.
//
// # Concurrency
//
// Raft's goroutine reads (Entries, Term, ...) while the application goroutine
// writes (Save). Writers are serialised by wmu; writers of snapshot files by
// snapMu, taken before wmu. filesMu keeps stale snapshot files from being
// removed while Snapshot() reads one. The in-memory state and the
// tail cache are guarded by mu; commitMu is held exclusively while a batch is
// committed and the in-memory state is switched over, and shared by readers
// that go to Pebble. So readers served from the tail cache (the hot path)
// never wait for an fsync, and readers that go to disk never see Pebble
// contents that disagree with the in-memory state.
package raftlog
