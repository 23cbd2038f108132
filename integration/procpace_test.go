package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gomaxprocs is the processors a controller runs on now, from its /metrics.
func gomaxprocs(t *testing.T, n *node) float64 {
	return metricValue(t, n, "go_sched_gomaxprocs_threads")
}

// A real controller goes to one processor once idle, gets all of them
// back under a burst of concurrent writes, and with --pace-procs=false
// keeps the runtime's choice throughout (roles/procpace).
func TestProcPace_OneProcessorWhenIdleAllUnderLoad(t *testing.T) {
	// .ci/run's machine has 2 cores and sets no GOMAXPROCS, so CI runs it.
	if runtime.NumCPU() < 2 || os.Getenv("GOMAXPROCS") != "" {
		t.Skip("needs 2 or more cores and no GOMAXPROCS in the environment")
	}
	c := newCluster(t, 1)
	c.startAll()
	c.waitLeader(30 * time.Second)
	n := c.nodes[1]

	// Idle after its start: one processor within the pacer's second of
	// light load (and the start's restore before it).
	deadline := time.Now().Add(30 * time.Second)
	for gomaxprocs(t, n) != 1 {
		require.True(t, time.Now().Before(deadline), "an idle controller never went to one processor (go_sched_gomaxprocs_threads %v)", gomaxprocs(t, n))
		time.Sleep(100 * time.Millisecond)
	}

	// A bounded burst: 64 writers, each stopping at the deadline or
	// once the controller is seen on more than one processor.
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				_, _ = cl.Put(ctx, fmt.Sprintf("pace/%d/%d", w, i%100), []byte("some value of a few bytes"))
			}
		})
	}
	raised := false
	for !raised && ctx.Err() == nil {
		raised = gomaxprocs(t, n) > 1
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	require.True(t, raised, "64 concurrent writers for 30s never gave the controller more than one processor")

	// Off: the runtime's choice stays whatever the load.
	off := newCluster(t, 1, "--pace-procs=false")
	off.startAll()
	off.waitLeader(30 * time.Second)
	want := float64(runtime.NumCPU())
	if got := gomaxprocs(t, off.nodes[1]); got < want {
		// A cgroup CPU limit may have set the runtime's choice lower; the
		// check below needs it above one all the same.
		require.Greater(t, got, 1.0)
		want = got
	}
	// What is tested here is that nothing happens: an idle controller with
	// the pacer would be on one processor after a second of light load
	// (10 periods of 100 ms, as the first part saw), so the value is
	// watched for half as long again. No event marks the end of that
	// window, hence the fixed pauses.
	for range 15 {
		require.Equal(t, want, gomaxprocs(t, off.nodes[1]))
		time.Sleep(100 * time.Millisecond)
	}
}
