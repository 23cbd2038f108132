package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
)

// Concurrent proposals reach raft in batches (replica/propose_batch.go):
// the leader sends a follower fewer MsgApps carrying entries than there
// are entries. Proposed one at a time, as before, it sent at least one
// per entry.
func TestProposalsReachRaftInBatches(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	follower := mc.others(lead)[0]
	var apps, ents atomic.Int64
	mc.net.Hold(func(from uint64, m *pb.Message) bool {
		if from == lead && m.GetTo() == follower && m.GetType() == pb.MsgApp && len(m.GetEntries()) > 0 {
			apps.Add(1)
			ents.Add(int64(len(m.GetEntries())))
		}
		return false // count, never hold
	})
	putConcurrently(t, 64, 10, func(g, i int) error {
		_, err := mc.put(lead, fmt.Sprintf("b/%d/%d", g, i), "v")
		return err
	})
	require.GreaterOrEqual(t, ents.Load(), int64(640))
	require.Less(t, apps.Load(), ents.Load()*3/4, "%d MsgApps for %d entries: proposals went one by one", apps.Load(), ents.Load())
	t.Logf("%d MsgApps with entries carried %d entries", apps.Load(), ents.Load())
}

// A batch raft refuses is refused at once, as a single proposal was: while
// a leadership transfer is under way the leader drops proposals, and its
// callers hear "no leader" (retry elsewhere) instead of waiting out the
// request timeout.
func TestRefusedBatchIsAnsweredAtOnce(t *testing.T) {
	mc := newMemCluster(t, 3, func(c *Config) { c.RequestTimeout = 5 * time.Second })
	lead := mc.waitLeader(mc.ids()...)
	target := mc.others(lead)[0]
	_, err := mc.put(lead, "k", "v")
	require.NoError(t, err)
	// The target hears nothing from the leader, so the transfer cannot
	// finish (raft waits for the target to catch up, then gives up after
	// an election timeout) and the leader drops proposals meanwhile.
	mc.net.Hold(func(from uint64, m *pb.Message) bool { return from == lead && m.GetTo() == target })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { _ = mc.node(lead).TransferLeader(ctx, target) }()
	var wg sync.WaitGroup
	var dropped atomic.Int64
	deadline := time.Now().Add(5 * time.Second)
	for dropped.Load() == 0 && time.Now().Before(deadline) {
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				_, err := mc.put(lead, fmt.Sprintf("t/%d", i), "v")
				if errors.Is(err, fault.ErrNoLeader) {
					if d := time.Since(start); d > 2*time.Second {
						t.Errorf("a dropped proposal waited %s, as for its timeout", d)
					}
					dropped.Add(1)
				}
			}()
		}
		wg.Wait()
	}
	require.NotZero(t, dropped.Load(), "no proposal was dropped during the transfer")
	mc.net.ReleaseHeld()
	mc.net.Hold(func(uint64, *pb.Message) bool { return false })
}

// putConcurrently runs put(g, i) for i < each in each of goroutines
// goroutines (a goroutine stops at its first error) and fails t on any
// error.
func putConcurrently(t *testing.T, goroutines, each int, put func(g, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := put(g, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// A proposal that cannot commit times out at the sooner of the caller's
// deadline and the request timeout (replica.propose sets its own timer
// only when the caller's deadline is later or absent).
func TestProposalTimesOutAtTheSoonerDeadline(t *testing.T) {
	const requestTimeout = 300 * time.Millisecond
	mc := newMemCluster(t, 3, func(c *Config) { c.RequestTimeout = requestTimeout })
	lead := mc.waitLeader(mc.ids()...)
	_, err := mc.put(lead, "k", "v")
	require.NoError(t, err)
	// Heartbeats still flow, so the leader stays leader; entries do not
	// reach the followers, so nothing new commits.
	mc.net.Hold(func(from uint64, m *pb.Message) bool {
		return from == lead && m.GetType() == pb.MsgApp && len(m.GetEntries()) > 0
	})
	for _, tc := range []struct {
		name   string
		parent time.Duration // 0: no deadline
	}{{"no deadline", 0}, {"a later deadline", time.Minute}, {"a sooner deadline", 50 * time.Millisecond}} {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if tc.parent > 0 {
			ctx, cancel = context.WithTimeout(ctx, tc.parent)
		}
		done := make(chan error, 1)
		go func() {
			_, err := mc.node(lead).Propose(ctx, &metadata.Command{Op: metadata.OpPut, Key: "t", Value: []byte(tc.name)})
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorIs(t, err, ErrTimeout, tc.name)
			if tc.parent > 0 && tc.parent < requestTimeout {
				require.Error(t, ctx.Err(), "%s: returned before the caller's deadline", tc.name)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the proposal never timed out", tc.name)
		}
		cancel()
	}
}
