package procpace

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const mib = 1 << 20

// heapAt is a sample of a process with live MiB live, goal MiB as its
// collector's goal and heap MiB in its heap.
func heapAt(live, goal, heap uint64) Sample {
	return Sample{Live: live * mib, Goal: goal * mib, Heap: heap * mib}
}

func TestGCNear(t *testing.T) {
	c := testConfig() // 64 MiB and 0.65: for 240 live and a 380 goal, from 331
	for _, tc := range []struct {
		name      string
		prev, cur Sample
		near      bool
	}{
		{"just collected", heapAt(240, 380, 340), heapAt(240, 380, 250), false},
		{"far from the goal, slowly", heapAt(240, 380, 300), heapAt(240, 380, 303), false},
		{"two periods from it", heapAt(240, 380, 310), heapAt(240, 380, 320), true},
		{"past it, marking", heapAt(240, 380, 340), heapAt(240, 380, 344), true},
		{"past it, shrinking", heapAt(240, 380, 350), heapAt(240, 380, 345), true},
		// The runtime's count of this heap is ahead of ours: it may be
		// marking at 0.7 of the room by its count while ours shows 0.68.
		{"at the runtime's mark, growing slowly", heapAt(300, 428, 386), heapAt(300, 428, 387), true},
		{"a small heap", heapAt(30, 60, 40), heapAt(30, 60, 58), false},
		{"no goal known", heapAt(240, 0, 300), heapAt(240, 0, 350), false},
	} {
		require.Equal(t, tc.near, c.gcNear(tc.prev, tc.cur), tc.name)
	}
}

// A collection of a large heap raises the Ps before it starts and keeps
// them through its marking, on a load that alone would stay on one P; a
// second after it, the process is back on one.
func TestGovernorRaisesForACollection(t *testing.T) {
	c := testConfig()
	g := governor{cfg: c, procs: 1}
	wall := 100 * time.Millisecond
	prev := heapAt(240, 380, 280)
	step := func(heap uint64) int {
		cur := heapAt(240, 380, heap)
		cur.CPU = prev.CPU + wall/2 // half a core: light
		l := c.measure(prev, cur, wall)
		prev = cur
		return g.next(l)
	}
	require.Equal(t, 1, step(290))
	require.Equal(t, 1, step(300))
	require.Equal(t, 4, step(315), "the collection is two periods away")
	require.Equal(t, 4, step(340), "marking")
	require.Equal(t, 4, step(345), "marking")
	for i := 1; i < DefaultDownPeriods; i++ {
		require.Equal(t, 4, step(250+uint64(i)), "period %d after the collection", i)
	}
	require.Equal(t, 1, step(262))
}

func TestReadProcessSeesTheHeap(t *testing.T) {
	runtime.GC()
	s := newProcessReader().read()
	require.Positive(t, s.Heap)
	require.Positive(t, s.Live)
	require.Greater(t, s.Goal, s.Live)
}
