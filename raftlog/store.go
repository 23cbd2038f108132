package raftlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// defaultCacheBytes bounds the tail cache when Options.CacheBytes is 0.
// 16 MiB holds about 40,000 entries of a 256-byte put: more than a second
// of the fastest write load measured here, so a follower within that of
// the leader, and the apply loop, read no entry from Pebble. 64 MiB kept
// up to 46 MB of entries on the heap after a million-key load, about a
// tenth of the process (docs/PERFORMANCE.md, "A smaller tail cache").
const defaultCacheBytes = 16 << 20

// ErrClosed is returned by every method of a closed Store.
var ErrClosed = errors.New("raft log closed")

// ErrLocked is returned by Open when another process (or another Open in
// this one) has the store open: Pebble's lock file is held.
var ErrLocked = errors.New("in use by another process")

// corruptRemedy is appended to corruption errors at Open: the operator needs
// to know that the store will not heal itself and what to do instead.
const corruptRemedy = "; the node's raft data is damaged and will not be served: restore the data directory " +
	"from a backup, or wipe it and re-add the node to the cluster so it catches up from the leader"

// Options configures Open.
type Options struct {
	// Dir is the Pebble directory; it is created if missing. Snapshot data
	// files live in its subdirectory snap/.
	Dir string
	// CacheBytes bounds the in-memory tail cache of log entries; 0 => 16 MiB.
	CacheBytes uint64
	// NoSync disables fsync even where Save/CreateSnapshot ask for it. Tests
	// and benchmarks only: with it a crash can lose acknowledged entries.
	NoSync bool
	// Logger receives Store and Pebble logs; nil => slog.Default().
	Logger *slog.Logger
	// OnSync, if set, is called with the duration of every synced batch
	// commit (a metrics hook for fsync latency). It must not call the Store.
	OnSync func(time.Duration)
}

// state is the in-memory mirror of the persisted raft state. Pointer fields
// are never mutated once published, only replaced, so a copy of state is a
// consistent snapshot.
type state struct {
	trunc truncState           // dummy entry; first index is trunc.index+1
	last  uint64               // last log index; == trunc.index when the log is empty
	hs    *pb.HardState        // nil until a non-empty HardState is saved
	cs    *pb.ConfState        // latest persisted ConfState, never nil
	snap  *pb.SnapshotMetadata // metadata of the latest snapshot, never nil
	// snapFile names the latest snapshot's data file; nil for a store with
	// no snapshot or one written before data files (data inline under
	// keySnapData).
	snapFile *snapRef
}

// Store is a durable raft.Storage backed by Pebble. It is safe for
// concurrent use: raft's goroutine reads while the application writes.
type Store struct {
	opts Options
	log  *slog.Logger
	db   *pebble.DB

	snapMu   sync.Mutex   // serialises snapshot file writers (CreateSnapshot, Save with a snapshot, Bootstrap); taken before wmu
	wmu      sync.Mutex   // serialises writers; a writer may read s.st/s.cache without mu
	filesMu  sync.RWMutex // shared: a Snapshot() reading a data file; exclusive: removing stale files. Taken before mu
	commitMu sync.RWMutex // exclusive: batch commit + state switch; shared: readers touching Pebble
	mu       sync.RWMutex // guards st, cache, closed, failed

	st     state
	cache  tailCache
	closed bool
	failed error // sticky: after a failed commit the on-disk state is unknown

	// opened holds the snapshot data Open mapped and verified, for the
	// first Snapshot() call (the controller's, at start) to take instead of
	// reading and checksumming the file a second time: at a million keys
	// the file is 280 MB. Guarded by mu; nil once taken. Once taken, the
	// mapping is never unmapped (see Snapshot); Close unmaps it if no one
	// took it.
	opened *openedSnap
	// snapFileReads counts data files read and verified (tests).
	snapFileReads atomic.Int64

	// testHookSnapWritten, if set (tests only), runs in CreateSnapshot after
	// the data file is written and before wmu is taken for the metadata.
	testHookSnapWritten func()
}

var _ raft.Storage = (*Store)(nil)

// openedSnap is verified snapshot data, mapped read-only from the file it
// came from.
type openedSnap struct {
	ref   *snapRef
	data  []byte
	unmap func()
}

// Open opens (creating if needed) the store in o.Dir and validates all of it:
// the CRC of every record, log contiguity trunc+1..last, non-decreasing entry
// terms, and hs.Commit <= last. A damaged store is never served: the error
// wraps ErrCorrupt, says what is damaged and how to recover.
func Open(o Options) (*Store, error) {
	if o.Dir == "" {
		return nil, errors.New("open raft log: Options.Dir is empty")
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = defaultCacheBytes
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "raftlog", "dir", o.Dir)
	if err := os.MkdirAll(o.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", o.Dir, err)
	}
	if err := mkSnapDir(o); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", o.Dir, err)
	}
	s, err := openStore(o, logger)
	if err != nil {
		// Pebble's LOCK file is flock'ed by another process (EAGAIN), or Pebble's
		// own registry says this process has it open (a message, no sentinel).
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
			strings.Contains(err.Error(), "lock held by current process") {
			return nil, fmt.Errorf("open raft log %s: %w", o.Dir, ErrLocked)
		}
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("open raft log %s: %w%s", o.Dir, err, corruptRemedy)
		}
		return nil, fmt.Errorf("open raft log %s: %w", o.Dir, err)
	}
	logger.Info("opened raft log", "first", s.st.trunc.index+1, "last", s.st.last,
		"snapshot", s.st.snap.GetIndex(), "commit", s.st.hs.GetCommit(), "term", s.st.hs.GetTerm())
	return s, nil
}

// mkSnapDir creates the snapshot file directory and makes its entry in
// o.Dir durable, so that files fsynced into it cannot vanish with it.
func mkSnapDir(o Options) error {
	dir := filepath.Join(o.Dir, snapDirName)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create snapshot directory: %w", err)
	}
	if o.NoSync {
		return nil
	}
	d, err := os.Open(o.Dir)
	if err != nil {
		return fmt.Errorf("create snapshot directory: %w", err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("create snapshot directory: fsync %s: %w", o.Dir, err)
	}
	return nil
}

// openStore opens Pebble and loads+validates the store. Pebble may panic on
// some malformed files; a damaged store must surface as an error rather than
// take the process down at startup, so panics are converted to ErrCorrupt.
func openStore(o Options, logger *slog.Logger) (s *Store, err error) {
	var db *pebble.DB
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				closeQuietly(db)
			}
			if s != nil {
				s.dropOpened()
			}
			s, err = nil, fmt.Errorf("%w: panic while opening: %v", ErrCorrupt, r)
		}
	}()
	db, err = pebble.Open(o.Dir, pebbleOptions(logger))
	if err != nil {
		return nil, pebbleErr("open pebble", err)
	}
	s = &Store{opts: o, log: logger, db: db, cache: newTailCache(o.CacheBytes)}
	if err := s.load(); err != nil {
		closeQuietly(db)
		s.dropOpened()
		return nil, err
	}
	return s, nil
}

// dropOpened unmaps the snapshot Open mapped if no one took it. The caller
// holds mu, or is Open.
func (s *Store) dropOpened() {
	if s.opened != nil {
		s.opened.unmap()
		s.opened = nil
	}
}

// closeQuietly closes a database that is being abandoned because of an
// earlier error, which is the one worth reporting.
func closeQuietly(db *pebble.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// Close releases the Pebble database. It is idempotent; every other method
// of a closed Store returns ErrClosed.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cache.reset()
	s.dropOpened() // never handed out, so no one can be reading it
	if err := s.db.Close(); err != nil {
		return pebbleErr("close raft log "+s.opts.Dir, err)
	}
	return nil
}

// usableLocked returns why the store cannot serve requests, if it cannot.
// The caller holds mu (read or write) or wmu.
func (s *Store) usableLocked() error {
	if s.closed {
		return ErrClosed
	}
	if s.failed != nil {
		return fmt.Errorf("raft log %s failed earlier: %w", s.opts.Dir, s.failed)
	}
	return nil
}

// usable is usableLocked for callers that hold only wmu.
func (s *Store) usable() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.usableLocked()
}

// commit commits b (synced iff sync and !NoSync) and then, atomically for
// readers, runs publish to switch the in-memory state. Called with wmu held.
func (s *Store) commit(b *pebble.Batch, sync bool, publish func()) error {
	sync = sync && !s.opts.NoSync
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	s.commitMu.Lock()
	start := time.Now()
	err := b.Commit(opts)
	took := time.Since(start)
	s.mu.Lock()
	if err != nil {
		// Pebble may or may not have applied the batch; the in-memory state
		// can no longer be trusted to match the disk, so stop serving.
		s.failed = err
	} else {
		publish()
	}
	s.mu.Unlock()
	s.commitMu.Unlock()
	if err != nil {
		s.log.Error("raft log commit failed; store disabled", "err", err)
		return pebbleErr("commit raft log batch", err)
	}
	if sync && s.opts.OnSync != nil {
		s.opts.OnSync(took)
	}
	return nil
}

// get reads key from Pebble and verifies its record, returning a copy of the
// payload. The caller holds commitMu shared (or wmu).
func (s *Store) get(key []byte) ([]byte, bool, error) {
	val, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, pebbleErr(fmt.Sprintf("read %s", describeKey(key)), err)
	}
	// Pebble's value is only valid until closer.Close(); copy it first.
	val = slices.Clone(val)
	if err := closer.Close(); err != nil {
		return nil, false, pebbleErr("read "+describeKey(key), err)
	}
	payload, err := decodeRecord(key, val)
	if err != nil {
		return nil, false, err
	}
	return payload, true, nil
}

// getProto reads key and unmarshals its record into m.
func (s *Store) getProto(key []byte, m proto.Message) (bool, error) {
	val, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, pebbleErr(fmt.Sprintf("read %s", describeKey(key)), err)
	}
	val = slices.Clone(val)
	if err := closer.Close(); err != nil {
		return false, pebbleErr("read "+describeKey(key), err)
	}
	return true, decodeProtoRecord(key, val, m)
}

// pebbleErr wraps a Pebble error with context, marking Pebble-detected
// corruption (block checksums, WAL, MANIFEST) as ErrCorrupt too.
func pebbleErr(what string, err error) error {
	if pebble.IsCorruptionError(err) {
		return fmt.Errorf("%s: %w: %w", what, ErrCorrupt, pebbleError{err})
	}
	return fmt.Errorf("%s: %w", what, pebbleError{err})
}

// pebbleError keeps Pebble's (cockroachdb/errors) error in the chain for
// errors.Is/As while rendering it with its plain Error() text: fmt's %w verb
// would otherwise make it print its verbose form, stack traces included.
type pebbleError struct{ err error }

// Error renders Pebble's message on one line, without the placeholder line
// cockroachdb/errors appends for its corruption payload.
func (e pebbleError) Error() string {
	msg := strings.ReplaceAll(e.err.Error(), "\n<corruption detail carrier>", "")
	return strings.Join(strings.Fields(msg), " ")
}
func (e pebbleError) Unwrap() error { return e.err }

// L0 thresholds. Every flush of the memtable holds the HardState key
// (written with each batch) beside a run of log entries, so every L0
// file overlaps every other, each is a sublevel of its own, and at
// Pebble's default of 4 sublevels it compacted L0 into the base level
// every few flushes: rewriting log entries that the truncation after
// the next snapshot deletes anyway, 6-10 % of each controller's CPU under
// 16 writing ZooKeeper clients (docs/PERFORMANCE.md, "L0 compactions of
// the raft log"). With 32, L0 holds the log that snapshots have not
// truncated yet and compacts it once, mostly dropped. Writes stop only
// at twice that (Pebble's default: 12), so a slow compaction never
// stalls the log.
const (
	l0CompactionThreshold = 32
	l0StopWritesThreshold = 2 * l0CompactionThreshold
)

// pebbleOptions configures Pebble for the store. Pebble's default reaction
// to on-disk corruption found on a read path is Logger.Fatalf (process exit);
// the store instead wants the read to fail with an error it can report (as
// ErrCorrupt at Open, or to raft, which then halts this node only).
func pebbleOptions(logger *slog.Logger) *pebble.Options {
	return &pebble.Options{
		FS:                    warmReuseFS{vfs.Default},
		L0CompactionThreshold: l0CompactionThreshold,
		L0StopWritesThreshold: l0StopWritesThreshold,
		Logger:                pebbleLogger{logger},
		EventListener: &pebble.EventListener{
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				logger.Error("pebble detected on-disk corruption", "path", info.Path, "err", info.Details.Error())
			},
		},
	}
}

// pebbleLogger adapts slog to Pebble's logger. Pebble's info logs are
// chatty (WAL replay, compactions), so they go to Debug.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "source", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "source", "pebble")
}

// Fatalf is called by Pebble on unrecoverable invariant violations and must
// not return; panicking (instead of os.Exit) lets Open turn it into an error.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Log(context.Background(), slog.LevelError, msg, "source", "pebble", "fatal", true)
	panic("pebble: " + msg)
}
