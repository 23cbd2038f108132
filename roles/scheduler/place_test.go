package scheduler

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

func workersN(n int, cpu, mem int64) []*schedWorker {
	ws := make([]*schedWorker, n)
	for i := range ws {
		ws[i] = &schedWorker{ID: fmt.Sprintf("w%02d", i), Epoch: 1,
			Capacity: metadata.Capacity{CPUMillis: cpu, MemoryMB: mem}, Labels: map[string]string{}}
	}
	return ws
}

func jobSpec(count int, placement string, cpu, mem int64) *metadata.JobSpec {
	s := &metadata.JobSpec{Name: "j", Count: count, Placement: placement,
		Task: metadata.Task{Command: "x", Resources: metadata.Resources{CPUMillis: cpu, MemoryMB: mem}}}
	s.Defaults()
	return s
}

func workersUsed(res placeResult) map[string]int {
	m := map[string]int{}
	for _, p := range res.Placements {
		m[p.WorkerID]++
	}
	return m
}

// TestPlace covers one placement pass per case: what is placed, on which
// workers, and what the shortfall says.
func TestPlace(t *testing.T) {
	t.Parallel()
	zoneB := func() []*schedWorker {
		ws := workersN(3, 1000, 1024)
		ws[2].Labels["zone"] = "b"
		return ws
	}
	inZone := func(zone string) *metadata.JobSpec {
		spec := jobSpec(2, metadata.PlaceSpread, 10, 10)
		spec.Constraints = []metadata.Constraint{{Label: "zone", Operator: "=", Value: zone}}
		return spec
	}
	singleton := func() *metadata.JobSpec {
		spec := jobSpec(1, metadata.PlaceSpread, 1, 1)
		spec.Singleton = true
		return spec
	}
	// maxAllocs sets every worker's --max-allocs, and their allocations
	// already placed.
	maxAllocs := func(ws []*schedWorker, limit, placed int) []*schedWorker {
		for _, w := range ws {
			w.MaxAllocs, w.Allocs = limit, placed
		}
		return ws
	}
	cases := []struct {
		name        string
		spec        *metadata.JobSpec
		want        int
		workers     []*schedWorker
		placed      int            // -1: not checked
		perWorker   map[string]int // nil: not checked
		workersUsed int            // 0: not checked
		reason      string         // a part of the shortfall's reason; "": not checked
	}{
		{name: "spread puts one per worker", spec: jobSpec(3, metadata.PlaceSpread, 100, 64), want: 3,
			workers: workersN(3, 1000, 1024), placed: 3, workersUsed: 3},
		{name: "binpack fills one worker first", spec: jobSpec(3, metadata.PlaceBinpack, 100, 64), want: 3,
			workers: workersN(3, 1000, 1024), placed: -1, workersUsed: 1},
		// 2 fit on each 1000m worker.
		{name: "respects capacity and explains the shortfall", spec: jobSpec(5, metadata.PlaceSpread, 400, 64), want: 5,
			workers: workersN(2, 1000, 1024), placed: 4, reason: "1 allocation(s) not placed"},
		{name: "constraints filter workers", spec: inZone("b"), want: 2, workers: zoneB(), placed: -1,
			perWorker: map[string]int{"w02": 2}},
		{name: "no worker meets the constraints", spec: inZone("c"), want: 2, workers: workersN(3, 1000, 1024), placed: 0,
			reason: "3 worker(s) do not meet the constraints"},
		{name: "no workers", spec: jobSpec(1, metadata.PlaceSpread, 1, 1), want: 1, placed: -1, reason: "no alive worker"},
		// Zero resources count as the minimum, and --max-allocs bounds
		// every worker, so a binpacked zero-resource job spreads out.
		{name: "zero-resource binpack stops at max allocs", spec: jobSpec(30, metadata.PlaceBinpack, 0, 0), want: 30,
			workers: maxAllocs(workersN(3, 1000, 1024), 10, 0), placed: 30,
			perWorker: map[string]int{"w00": 10, "w01": 10, "w02": 10}},
		{name: "over max allocs stays pending with the reason", spec: jobSpec(40, metadata.PlaceSpread, 0, 0), want: 40,
			workers: maxAllocs(workersN(3, 1000, 1024), 10, 0), placed: 30,
			reason: "10 allocation(s) not placed on 3 alive worker(s): 3 already run their maximum number of allocations (--max-allocs)"},
		{name: "allocations of other jobs count toward max allocs", spec: jobSpec(5, metadata.PlaceSpread, 0, 0), want: 5,
			workers: maxAllocs(workersN(2, 1000, 1024), 10, 9), placed: 2, reason: "maximum number of allocations"},
		{name: "a full worker is filtered with the reason", spec: jobSpec(1, metadata.PlaceSpread, 0, 0), want: 1,
			workers: maxAllocs(workersN(2, 1000, 1024), 10, 10), placed: 0, reason: "2 already run their maximum"},
		{name: "unset max allocs means the default", spec: jobSpec(150, metadata.PlaceBinpack, 0, 0), want: 150,
			workers: workersN(1, 100_000, 100_000), placed: metadata.DefaultMaxAllocs},
		{name: "zero cpu counts as the minimum cpu", spec: jobSpec(5, metadata.PlaceBinpack, 0, 0), want: 5,
			workers: workersN(1, 2*metadata.MinTaskCPUMillis+5, 1024), placed: 2, reason: "too little free cpu"},
		{name: "zero memory counts as the minimum memory", spec: jobSpec(5, metadata.PlaceBinpack, 0, 0), want: 5,
			workers: workersN(1, 1000, 3*metadata.MinTaskMemoryMB), placed: 3, reason: "too little free memory"},
		{name: "singleton places one", spec: singleton(), want: 3, workers: workersN(3, 1000, 1000), placed: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := place(tc.spec, tc.want, tc.workers)
			if tc.placed >= 0 {
				require.Len(t, res.Placements, tc.placed)
			}
			if tc.perWorker != nil {
				require.Equal(t, tc.perWorker, workersUsed(res))
			}
			if tc.workersUsed > 0 {
				require.Len(t, workersUsed(res), tc.workersUsed)
			}
			if tc.reason != "" {
				require.Contains(t, res.Reason, tc.reason)
			}
		})
	}
}

func BenchmarkPlace_100kOver1000Workers(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ws := workersN(1000, 1_000_000, 1_000_000)
		res := place(jobSpec(100000, metadata.PlaceSpread, 10, 10), 100000, ws)
		if len(res.Placements) != 100000 {
			b.Fatal(res.Reason)
		}
	}
}
