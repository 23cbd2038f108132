package replica

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/corral-dev/corral/metadata"
)

// Snapshots are written off the apply loop. Encoding a large state took
// longer than an election timeout (60,000 znodes: up to a second under
// load), and a leader that stops ticking and sending for that long is
// deposed; applying must not stop for it either. The apply loop only
// takes a cut (a copy-on-write copy of the state at the applied index,
// with the ConfState of that index), and one goroutine encodes it, saves
// it synced and compacts the log, as etcd's apply loop hands its snapshot
// to a goroutine.

// snapResult is what a background snapshot reports to the loop.
type snapResult struct {
	index uint64
	bytes int
	took  time.Duration
	stale bool // a leader's newer snapshot was installed meanwhile
	err   error
}

// snapshotDue says whether entries applied since the last snapshot, whose
// data add up to logBytes, are worth a new snapshot of a state whose last
// one was lastBytes long, for a member whose random delay is jitter (up to
// every/2). Every snapshot rewrites the whole state, so with a large state
// and small entries (the ZooKeeper benchmark: 30 MB of znodes, 400-byte
// creates) snapshotting every `every` entries spent a fifth of the
// machine's CPU on snapshots. So past every+jitter entries a snapshot also
// waits until the log holds half the state's size, plus the same share of
// jitter (ZooKeeper likewise has a size limit beside its count), but never
// beyond 10×(every+jitter) entries, which bounds what a restart replays.
//
// The jitter must reach the size rule too: the members apply the same
// entries, so without it they all passed the same half at the same entry,
// and a 33 MB state's snapshot (0.55 s of CPU) came on both followers
// within 1.4 s in a 16-client ZooKeeper benchmark run, the run 26 % below
// the one before it.
func snapshotDue(entries, every, jitter, logBytes, lastBytes uint64) bool {
	switch {
	case entries < every+jitter:
		return false
	case entries >= 10*(every+jitter):
		return true
	default:
		share := uint64(float64(lastBytes) * float64(jitter) / float64(max(every, 1)))
		return logBytes >= lastBytes/2+share
	}
}

// newSnapJitter draws a member's delay before its next snapshot: up to
// half of every.
func newSnapJitter(every uint64) uint64 { return rand.Uint64N(every/2 + 1) }

// maybeSnapshot starts a snapshot when snapshotDue, unless one is still
// being written. Each member adds its own random delay of up to half of
// SnapshotEvery, as ZooKeeper does, so that the members of a cluster do
// not all spend their CPU and disk on a snapshot at the same moment. It
// runs on the apply loop.
func (c *Replica) maybeSnapshot() {
	if c.snapBusy {
		return
	}
	st := c.state.Load()
	applied := st.AppliedIndex()
	if applied <= c.snapIndex || (!c.snapForced && !snapshotDue(applied-c.snapIndex, c.cfg.SnapshotEvery, c.snapJitter, c.logBytes, c.snapBytes)) {
		if applied <= c.snapIndex {
			c.snapForced = false // nothing beyond the last one to take
		}
		return
	}
	// Applied entries may not be in the local log yet (storage_loops.go):
	// a snapshot beyond it would compact what has not been written. The
	// append loop calls again once it has written more.
	if !c.logHolds(applied) {
		c.snapWaits.Store(true)
		if !c.logHolds(applied) {
			return
		}
		c.snapWaits.Store(false)
	}
	c.logBytes = 0
	c.snapForced = false
	c.snapJitter = newSnapJitter(c.cfg.SnapshotEvery)
	start := time.Now()
	cut := st.Cut()
	cs := proto.Clone(c.currentConfState()).(*pb.ConfState)
	c.met.snapshotDuration.WithLabelValues("cut").Observe(time.Since(start).Seconds())
	c.snapBusy = true
	c.snapWG.Go(func() { c.snapDone <- c.writeSnapshot(cut, cs, start) })
}

// logHolds reports whether the local log, as written and synced, reaches
// index i (false when the store cannot say: it is closing).
func (c *Replica) logHolds(i uint64) bool {
	last, err := c.store.LastIndex()
	return err == nil && last >= i
}

// writeSnapshot encodes and saves cut, then compacts the log behind it,
// keeping SnapshotCatchUp entries for followers. The store serialises it
// with the loop's writes.
func (c *Replica) writeSnapshot(cut *metadata.SnapshotCut, cs *pb.ConfState, start time.Time) snapResult {
	if h := c.cfg.Hooks.SnapshotWriting; h != nil {
		h()
	}
	// The cut holds the state's znodes frozen until written; a store that
	// fails before writing it must not leave them so.
	defer cut.Release()
	idx := cut.Index()
	// Streamed into the file: at a million keys an encoded copy was 270 MB
	// of heap per snapshot, which the Go runtime then kept.
	size := cut.Len()
	if _, err := c.store.CreateSnapshotFrom(idx, cs, size, func(w io.Writer) error {
		_, err := cut.WriteTo(w)
		return err
	}); err != nil {
		if errors.Is(err, raft.ErrSnapOutOfDate) {
			return snapResult{index: idx, stale: true}
		}
		return snapResult{err: fmt.Errorf("save snapshot at %d: %w", idx, err)}
	}
	if idx > c.cfg.SnapshotCatchUp {
		compact := idx - c.cfg.SnapshotCatchUp
		// Nor past the synced commit index (raftApplied says how the
		// applied index gets ahead of it): raft refuses to restart with
		// a log truncated beyond its HardState's commit.
		hs, _, err := c.store.InitialState()
		if err != nil {
			return snapResult{err: fmt.Errorf("read raft state: %w", err)}
		}
		compact = min(compact, hs.GetCommit())
		first, err := c.store.FirstIndex()
		if err != nil {
			return snapResult{err: fmt.Errorf("read first log index: %w", err)}
		}
		if compact > first {
			if err := c.store.Compact(compact); err != nil && !errors.Is(err, raft.ErrCompacted) {
				return snapResult{err: fmt.Errorf("compact raft log to %d: %w", compact, err)}
			}
		}
	}
	return snapResult{index: idx, bytes: int(size), took: time.Since(start)}
}

// snapshotDone records a finished snapshot on the apply loop. A store error
// stops the loop, as a failed Save does.
func (c *Replica) snapshotDone(r snapResult) error {
	c.snapBusy = false
	switch {
	case r.err != nil:
		return r.err
	case r.stale:
		c.log.Info("dropped a snapshot overtaken by the leader's", "index", r.index, "installed", c.snapIndex)
		return nil
	}
	c.snapIndex = max(c.snapIndex, r.index)
	c.snapBytes = uint64(r.bytes)
	c.met.snapshots.Inc()
	c.met.snapshotSize.Set(float64(r.bytes))
	c.met.snapshotDuration.WithLabelValues("write").Observe(r.took.Seconds())
	c.log.Info("took snapshot", "index", r.index, "bytes", r.bytes, "took", r.took)
	return nil
}
