package controller

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A single controller never answers a write before its own disk holds
// it. This must survive any reordering of the raft loop: raft (v3.6+)
// counts the leader's own copy only once the Ready is persisted, so even
// committed entries applied before the write (raftloop.go weighs it)
// could not acknowledge an unsynced entry.
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
	mc.waitLeader(1)
	_, err := mc.put(1, "before", "v")
	require.NoError(t, err)
	c := mc.node(1)
	next := c.State().AppliedIndex() + 1
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
	// The raft loop is inside the write: nothing it applies can happen now.
	require.Less(t, c.State().AppliedIndex(), next, "applied before it was persisted")
	select {
	case err := <-done:
		t.Fatalf("answered before the write was persisted (err %v)", err)
	default:
	}
	target.Store(0)
	close(release)
	require.NoError(t, <-done)
}
