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

func TestController_ReplicatesAndReadsLinearizably(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	for i := 0; i < 30; i++ {
		from := mc.ids()[i%3] // followers forward to the leader through raft
		res, err := mc.put(from, fmt.Sprintf("k%02d", i), fmt.Sprint(i))
		require.NoError(t, err)
		require.NoError(t, res.Err)
	}
	for _, id := range mc.ids() {
		c := mc.node(id)
		require.NoError(t, c.r.LinearizableRead(context.Background()))
		kv, ok := c.State().Get("k29")
		require.True(t, ok, "node %d (leader %d) misses k29 after a linearizable read", id, lead)
		require.Equal(t, "29", string(kv.Value))
	}
	require.Eventually(t, func() bool { return mc.node(1).ClusterID() != "" }, 5*time.Second, 5*time.Millisecond)
	for _, id := range mc.ids() {
		require.Eventually(t, func() bool { return mc.node(id).ClusterID() == mc.node(1).ClusterID() },
			5*time.Second, 5*time.Millisecond)
	}
}

func TestController_MinorityLeaderStepsDown(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	old := mc.waitLeader(mc.ids()...)
	oldTerm := mc.node(old).Term()
	rest := mc.others(old)
	mc.net.Partition([]uint64{old}, rest)

	// CheckQuorum: a leader that cannot hear a majority steps down.
	require.Eventually(t, func() bool { return !mc.node(old).r.IsLeader() }, 10*time.Second, 5*time.Millisecond)
	lead := mc.waitLeader(rest...)
	require.Greater(t, mc.node(lead).Term(), oldTerm)
	_, err := mc.put(rest[0], "after-partition", "yes")
	require.NoError(t, err)

	// The cut-off node cannot commit anything.
	_, err = mc.put(old, "minority", "no")
	require.Error(t, err)

	mc.net.Heal()
	mc.waitLeader(mc.ids()...)
	require.Eventually(t, func() bool {
		_, ok := mc.node(old).State().Get("after-partition")
		return ok
	}, 10*time.Second, 5*time.Millisecond)
	_, ok := mc.node(old).State().Get("minority")
	require.False(t, ok, "a write proposed on the minority side was applied")
}

func TestController_SurvivesDropsDelaysAndReordering(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	mc.waitLeader(mc.ids()...)
	mc.net.SetDropRate(0.1)
	mc.net.SetDelay(0, 5*time.Millisecond)
	acked := map[string]bool{}
	for i := 0; i < 60; i++ {
		key := fmt.Sprintf("d%03d", i)
		_, err := mc.put(mc.ids()[i%3], key, key)
		if err == nil {
			acked[key] = true
		}
	}
	mc.net.SetDropRate(0)
	mc.net.SetDelay(0, 0)
	require.NotEmpty(t, acked)
	lead := mc.waitLeader(mc.ids()...)
	_, err := mc.put(lead, "barrier", "x")
	require.NoError(t, err)
	// Every controller ends with byte-identical state.
	require.Eventually(t, func() bool {
		want, _ := mc.node(lead).State().Snapshot()
		for _, id := range mc.ids() {
			got, _ := mc.node(id).State().Snapshot()
			if string(got) != string(want) {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	for key := range acked {
		_, ok := mc.node(lead).State().Get(key)
		require.True(t, ok, "acknowledged write %s lost", key)
	}
}

func TestController_LaggingFollowerCatchesUpFromSnapshot(t *testing.T) {
	mc := newMemCluster(t, 3, func(c *Config) { c.SnapshotEvery = 40; c.SnapshotCatchUp = 10 })
	lead := mc.waitLeader(mc.ids()...)
	lagger := mc.others(lead)[0]
	mc.stopNode(lagger)
	for i := 0; i < 150; i++ {
		_, err := mc.put(lead, fmt.Sprintf("s%03d", i), "v")
		require.NoError(t, err)
	}
	// Snapshots are written off the raft loop: the compaction follows.
	require.Eventually(t, func() bool {
		first, err := mc.node(lead).r.FirstIndex()
		return err == nil && first > 50
	}, 10*time.Second, 10*time.Millisecond, "leader did not compact its log")
	mc.start(lagger)
	require.Eventually(t, func() bool {
		_, ok := mc.node(lagger).State().Get("s149")
		return ok
	}, 15*time.Second, 10*time.Millisecond)
	require.Equal(t, 150, countPrefix(mc.node(lagger), "s"))
}

func TestController_RestartKeepsState(t *testing.T) {
	mc := newMemCluster(t, 3, func(c *Config) { c.SnapshotEvery = 25; c.SnapshotCatchUp = 5 })
	lead := mc.waitLeader(mc.ids()...)
	// restartAll stops and starts every controller and returns the leader
	// once it serves linearizable reads.
	restartAll := func() uint64 {
		for _, id := range mc.ids() {
			mc.stopNode(id)
		}
		for _, id := range mc.ids() {
			mc.start(id)
		}
		lead := mc.waitLeader(mc.ids()...)
		require.NoError(t, mc.node(lead).r.LinearizableRead(context.Background()))
		return lead
	}
	for i := 0; i < 60; i++ {
		_, err := mc.put(lead, fmt.Sprintf("r%02d", i), "v")
		require.NoError(t, err)
	}
	lead = restartAll()
	require.Equal(t, 60, countPrefix(mc.node(lead), "r"))

	// The restored state refers to the snapshot file each store mapped at
	// start (metadata.RestoreNoCopy): overwrite half of it, snapshot it
	// again, and restart once more.
	for i := 0; i < 60; i += 2 {
		_, err := mc.put(lead, fmt.Sprintf("r%02d", i), "w")
		require.NoError(t, err)
	}
	lead = restartAll()
	for i := 0; i < 60; i++ {
		kv, ok := mc.node(lead).State().Get(fmt.Sprintf("r%02d", i))
		require.True(t, ok)
		require.Equal(t, map[bool]string{true: "w", false: "v"}[i%2 == 0], string(kv.Value))
	}
}

// A snapshot being written holds up neither the raft loop nor the apply
// loop: with the snapshot goroutine blocked, writes still commit and are
// applied (each put waits for its apply), and the log is compacted
// once it is released.
func TestController_SnapshotOffTheRaftLoop(t *testing.T) {
	release := make(chan struct{})
	var blocked atomic.Int32
	mc := newMemCluster(t, 3, func(c *Config) {
		c.SnapshotEvery, c.SnapshotCatchUp = 20, 5
		c.SnapshotHook = func() {
			blocked.Add(1)
			<-release
		}
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before the cluster's cleanup, which waits for the snapshots
	lead := mc.waitLeader(mc.ids()...)
	for i := 0; ; i++ {
		_, err := mc.put(lead, fmt.Sprintf("b%03d", i), "v")
		require.NoError(t, err)
		if blocked.Load() == 3 && i >= 60 {
			break // every member's snapshot is stuck; writes went on
		}
		require.Less(t, i, 500, "no snapshot started")
	}
	first, err := mc.node(lead).r.FirstIndex()
	require.NoError(t, err)
	require.LessOrEqual(t, first, uint64(5), "compacted before the snapshot was written")
	unblock()
	require.Eventually(t, func() bool {
		first, err := mc.node(lead).r.FirstIndex()
		return err == nil && first > 10
	}, 10*time.Second, 10*time.Millisecond, "log not compacted after the snapshot was written")
	require.Eventually(t, func() bool {
		return countPrefix(mc.node(lead), "b") == countPrefix(mc.node(mc.others(lead)[0]), "b")
	}, 10*time.Second, 10*time.Millisecond)
}

func countPrefix(c *Controller, prefix string) int { return len(c.State().Range(prefix, 0)) }

// A restarted follower knows its persisted term before any new HardState:
// with no write since, raft sends it none, and a leadership transfer to it
// (MsgTimeoutNow, checked against this term) was dropped as not from the
// leader.
func TestController_RestartedFollowerKnowsItsTerm(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	_, err := mc.put(lead, "k", "v")
	require.NoError(t, err)
	f := mc.others(lead)[0]
	term := mc.node(lead).r.Term()
	// The follower has persisted the leader's commit: its restart then
	// brings no new HardState.
	require.Eventually(t, func() bool {
		return mc.node(f).State().AppliedIndex() == mc.node(lead).State().AppliedIndex()
	}, 10*time.Second, 10*time.Millisecond)
	mc.stopNode(f)
	mc.start(f)
	require.Eventually(t, func() bool { return mc.node(f).r.LeaderID() == lead }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, term, mc.node(f).r.Term())
}
