package controller

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A single controller never answers a write before its own disk holds
// it. With asynchronous storage writes (storage_loops.go) raft counts the
// leader's own copy only once the append loop reports it synced, and
// hands out for applying only entries in the local log.
func TestController_SingleVoterAnswersOnlyAfterPersisting(t *testing.T) {
	var target atomic.Uint64 // the entry whose write is held
	entered, release := make(chan uint64, 1), make(chan struct{})
	mc := newMemCluster(t, 1, func(c *Config) {
		c.PersistHook = func(last uint64) {
			if want := target.Load(); want != 0 && last >= want {
				entered <- last
				<-release
			}
		}
	})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // runs before the cluster's own cleanup: a failed test must not leave the write held
	mc.waitLeader(1)
	_, err := mc.put(1, "before", "v")
	require.NoError(t, err)
	c := mc.node(1)
	// The next entry follows the last one written; wait until that one is
	// applied too, so that only the held write is left to apply.
	var next uint64
	require.Eventually(t, func() bool {
		last, err := c.r.LastIndex()
		next = last + 1
		return err == nil && c.State().AppliedIndex() == last
	}, 10*time.Second, time.Millisecond)
	target.Store(next)
	done := make(chan error, 1)
	go func() {
		_, err := mc.put(1, "held", "v")
		done <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the write never reached the disk")
	}
	// The append loop is inside the write, and raft hands the apply loop
	// only entries in the local log: the held one cannot be applied.
	require.Less(t, c.State().AppliedIndex(), next, "applied before it was persisted")
	select {
	case err := <-done:
		t.Fatalf("answered before the write was persisted (err %v)", err)
	default:
	}
	target.Store(0)
	free()
	require.NoError(t, <-done)
}
