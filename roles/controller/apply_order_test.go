package controller

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A single controller never answers a write before its own disk holds
// it: raft counts the leader's copy only once the Ready is persisted, so
// applying committed entries before the write (raftloop.go) cannot
// acknowledge an unsynced entry.
func TestController_SingleVoterAnswersOnlyAfterPersisting(t *testing.T) {
	var target atomic.Uint64 // the entry whose write is held
	entered, release := make(chan uint64, 1), make(chan struct{})
	mc := newMemCluster(t, 1, func(c *Config) {
		c.PersistHook = func(last, _ uint64) {
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

// With three voters, entries a majority holds are applied, and their
// clients answered, while the leader's own write of newer entries is
// still going on.
func TestController_CommittedEntriesApplyBeforeTheWrite(t *testing.T) {
	var holder atomic.Uint64 // the controller whose write is held: the leader
	var once sync.Once
	held := make(chan uint64, 1) // the last committed index of the held Ready
	release := make(chan struct{})
	mc := newMemCluster(t, 3, func(c *Config) {
		id := c.NodeID
		c.PersistHook = func(_, committed uint64) {
			if committed != 0 && holder.Load() == id {
				once.Do(func() {
					held <- committed
					<-release
				})
			}
		}
	})
	lead := mc.waitLeader(mc.ids()...)
	var unblock sync.Once
	t.Cleanup(func() { unblock.Do(func() { close(release) }) })
	holder.Store(lead)
	// Writers until some Ready carries both new entries and committed ones.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = mc.put(lead, fmt.Sprintf("w%d/%d", w, i), "v")
			}
		})
	}
	var committed uint64
	select {
	case committed = <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("no Ready carried new and committed entries")
	}
	// The loop is blocked before the write; the committed entries of the
	// same Ready were applied already.
	require.GreaterOrEqual(t, mc.node(lead).State().AppliedIndex(), committed,
		"committed entries waited for the leader's own write")
	close(stop)
	unblock.Do(func() { close(release) })
	wg.Wait()
}
