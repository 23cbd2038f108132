package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heldWrites holds one controller's log writes from a given entry on,
// until free: what a slow or stalled disk looks like to the rest.
type heldWrites struct {
	from, on atomic.Uint64 // the first entry held (0: none), and on which controller
	entered  chan uint64   // the held write's last entry, once it is reached
	release  chan struct{}
	once     sync.Once
}

func newHeldWrites() *heldWrites {
	return &heldWrites{entered: make(chan uint64, 1), release: make(chan struct{})}
}

// hook is controller id's PersistHook.
func (h *heldWrites) hook(id uint64) func(uint64) {
	return func(last uint64) {
		if want := h.from.Load(); want != 0 && last >= want && h.on.Load() == id {
			select {
			case h.entered <- last:
			default:
			}
			<-h.release
		}
	}
}

// hold holds controller id's writes from entry from on.
func (h *heldWrites) hold(id, from uint64) {
	h.on.Store(id)
	h.from.Store(from)
}

// waitEntered waits until the held write is reached and returns its last
// entry.
func (h *heldWrites) waitEntered(t *testing.T, what string) uint64 {
	t.Helper()
	select {
	case last := <-h.entered:
		return last
	case <-time.After(10 * time.Second):
		t.Fatal(what)
		return 0
	}
}

// free lets every held write go, and holds no more. A test registers it
// with t.Cleanup after creating its cluster, so that it runs before the
// cluster's own cleanup: a failed test must not leave a write held.
func (h *heldWrites) free() {
	h.from.Store(0)
	h.once.Do(func() { close(h.release) })
}

// nextEntry waits until controller c applied its whole log and returns
// the index the next entry will have.
func nextEntry(t *testing.T, c *Controller) uint64 {
	t.Helper()
	var next uint64
	require.Eventually(t, func() bool {
		last, err := c.r.LastIndex()
		next = last + 1
		return err == nil && c.State().AppliedIndex() == last
	}, 10*time.Second, time.Millisecond)
	return next
}

// A single controller never answers a write before its own disk holds
// it. With asynchronous storage writes (storage_loops.go) raft counts the
// leader's own copy only once the append loop reports it synced, and
// hands out for applying only entries in the local log.
func TestController_SingleVoterAnswersOnlyAfterPersisting(t *testing.T) {
	h := newHeldWrites()
	mc := newMemCluster(t, 1, func(c *Config) { c.PersistHook = h.hook(c.NodeID) })
	t.Cleanup(h.free)
	mc.waitLeader(1)
	_, err := mc.put(1, "before", "v")
	require.NoError(t, err)
	c := mc.node(1)
	// The next entry follows the last one written, applied too, so that
	// only the held write is left to apply.
	next := nextEntry(t, c)
	h.hold(1, next)
	done := make(chan error, 1)
	go func() {
		_, err := mc.put(1, "held", "v")
		done <- err
	}()
	held := h.waitEntered(t, "the write never reached the disk")
	// The append loop is inside the write, and raft hands the apply loop
	// only entries in the local log: nothing past what the disk holds is
	// applied. (An entry of the controller's own may have been written
	// before the hold: the held write is the one with the put, not
	// necessarily entry next.) Applied is read first: both only grow.
	applied := c.State().AppliedIndex()
	persisted, err := c.r.LastIndex()
	require.NoError(t, err)
	require.Less(t, persisted, held, "the held write's entries are on disk")
	require.LessOrEqual(t, applied, persisted, "applied before it was persisted")
	select {
	case err := <-done:
		t.Fatalf("answered before the write was persisted (err %v)", err)
	default:
	}
	h.free()
	require.NoError(t, <-done)
}

// In a cluster of three, a leader answers a write once both followers
// hold it, while its own write of it is still held up (raft's
// ApplyUnstableCommitted: the leader's fsync is not on the write's path).
// And the answer holds when the leader stops before making that write, as
// in a crash: a new leader has the entry, and the old leader, restarted
// without it, gets it back.
func TestController_LeaderAnswersOnceAQuorumOfFollowersHoldsIt(t *testing.T) {
	h := newHeldWrites()
	mc := newMemCluster(t, 3, func(c *Config) { c.PersistHook = h.hook(c.NodeID) })
	t.Cleanup(h.free)
	lead := mc.waitLeader(mc.ids()...)
	_, err := mc.put(lead, "before", "v")
	require.NoError(t, err)
	c := mc.node(lead)
	next := nextEntry(t, c)
	h.hold(lead, next)

	// Answered, applied, and still not in the leader's own log.
	_, err = mc.put(lead, "held", "v")
	require.NoError(t, err, "the followers hold it: the leader should answer")
	h.waitEntered(t, "the leader's write never reached its disk")
	kv, ok := c.State().Get("held")
	require.True(t, ok, "answered but not applied")
	require.Equal(t, "v", string(kv.Value))
	last, err := c.r.LastIndex()
	require.NoError(t, err)
	require.Less(t, last, next, "the leader's own write was made: the test held nothing")

	// Stop it before it writes (Stop halts the append loop first, and the
	// held write is then dropped, as a crash would).
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		mc.stopNode(lead)
	}()
	<-c.r.Stopping()
	h.free()
	<-stopped

	// A new leader among the other two has it.
	rest := mc.others(lead)
	nl := mc.waitLeader(rest...)
	require.NoError(t, mc.node(nl).r.LinearizableRead(context.Background()))
	kv, ok = mc.node(nl).State().Get("held")
	require.True(t, ok, "an answered write was lost with the leader's unwritten copy")
	require.Equal(t, "v", string(kv.Value))

	// The old leader restarts without it and gets it back.
	mc.net.Isolate(lead)
	mc.start(lead)
	last, err = mc.node(lead).r.LastIndex()
	require.NoError(t, err)
	require.Less(t, last, next, "the stopped leader wrote the held entry after all")
	mc.net.Heal()
	require.Eventually(t, func() bool {
		kv, ok := mc.node(lead).State().Get("held")
		return ok && string(kv.Value) == "v"
	}, 10*time.Second, 5*time.Millisecond, "the restarted leader never got the entry back")
}

// leaderAheadOfItsLog starts three controllers snapshotting every
// entries, holds the leader's own log writes, and puts 60 keys, all
// answered by the followers' copies: the leader then has applied entries
// its own log does not hold yet. It returns the leader and the hold.
func leaderAheadOfItsLog(t *testing.T, every uint64) (*Controller, *heldWrites) {
	t.Helper()
	h := newHeldWrites()
	mc := newMemCluster(t, 3, func(c *Config) {
		c.SnapshotEvery, c.SnapshotCatchUp = every, 2
		c.PersistHook = h.hook(c.NodeID)
	})
	t.Cleanup(h.free)
	lead := mc.waitLeader(mc.ids()...)
	c := mc.node(lead)
	last, err := c.r.LastIndex()
	require.NoError(t, err)
	h.hold(lead, last+1)
	for i := range 60 {
		_, err := mc.put(lead, fmt.Sprintf("s%02d", i), "v")
		require.NoError(t, err)
	}
	h.waitEntered(t, "the leader's write never reached its disk")
	return c, h
}

// A leader whose own writes are held up applies what its followers hold,
// but takes no snapshot ahead of its own log: that would compact entries
// it has not written. Once the writes are made, it snapshots again.
func TestController_NoSnapshotAheadOfTheLocalLog(t *testing.T) {
	c, h := leaderAheadOfItsLog(t, 10) // six times SnapshotEvery
	stable, err := c.r.LastIndex()
	require.NoError(t, err)
	require.Greater(t, c.State().AppliedIndex(), stable+50, "applied only what the leader wrote")
	first, err := c.r.FirstIndex()
	require.NoError(t, err)
	require.LessOrEqual(t, first, stable+1, "compacted past the local log: a snapshot got ahead of it")
	h.free()
	applied := c.State().AppliedIndex()
	require.Eventually(t, func() bool {
		first, err := c.r.FirstIndex()
		return err == nil && first > applied-10
	}, 10*time.Second, 5*time.Millisecond, "no snapshot once the writes were made")
}

// A stop that finds the leader's applied entries ahead of its own log (its
// writes held up, the followers' copies answered them) cannot snapshot
// them yet: that would compact entries it has not written. Its snapshot
// waits for the writes, and is taken as soon as the append loop has made
// them, well inside the stop's bound.
func TestController_StopSnapshotWaitsForTheLocalLog(t *testing.T) {
	c, h := leaderAheadOfItsLog(t, 20) // three times SnapshotEvery
	stable, err := c.r.LastIndex()
	require.NoError(t, err)
	applied := c.State().AppliedIndex()
	require.Greater(t, applied, stable+40, "applied only what the leader wrote")

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopSnapshotWithin)
		defer cancel()
		done <- c.r.SnapshotBeforeStop(ctx)
	}()
	// Checks that nothing happens for a while: not a wait for a condition.
	select {
	case err := <-done:
		t.Fatalf("the stop's snapshot finished while the log lagged (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	first, err := c.r.FirstIndex()
	require.NoError(t, err)
	require.LessOrEqual(t, first, stable+1, "compacted past the local log: a snapshot got ahead of it")

	h.free()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(stopSnapshotWithin):
		t.Fatal("the stop's snapshot was not taken once the writes were made")
	}
	first, err = c.r.FirstIndex()
	require.NoError(t, err)
	require.Greater(t, first, applied-10, "the stop's snapshot does not cover what was applied")
}
