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

func TestPlace_SpreadPutsOnePerWorker(t *testing.T) {
	t.Parallel()
	res := place(jobSpec(3, metadata.PlaceSpread, 100, 64), 3, workersN(3, 1000, 1024))
	require.Len(t, res.Placements, 3)
	require.Len(t, workersUsed(res), 3)
}

func TestPlace_BinpackFillsOneWorkerFirst(t *testing.T) {
	t.Parallel()
	res := place(jobSpec(3, metadata.PlaceBinpack, 100, 64), 3, workersN(3, 1000, 1024))
	require.Len(t, workersUsed(res), 1)
}

func TestPlace_RespectsCapacityAndExplainsShortfall(t *testing.T) {
	t.Parallel()
	res := place(jobSpec(5, metadata.PlaceSpread, 400, 64), 5, workersN(2, 1000, 1024))
	require.Len(t, res.Placements, 4, "2 fit on each 1000m worker")
	require.Contains(t, res.Reason, "1 allocation(s) not placed")
}

func TestPlace_ConstraintsFilterWorkers(t *testing.T) {
	t.Parallel()
	ws := workersN(3, 1000, 1024)
	ws[2].Labels["zone"] = "b"
	spec := jobSpec(2, metadata.PlaceSpread, 10, 10)
	spec.Constraints = []metadata.Constraint{{Label: "zone", Operator: "=", Value: "b"}}
	res := place(spec, 2, ws)
	require.Equal(t, map[string]int{"w02": 2}, workersUsed(res))

	spec.Constraints[0].Value = "c"
	res = place(spec, 2, workersN(3, 1000, 1024))
	require.Empty(t, res.Placements)
	require.Contains(t, res.Reason, "3 worker(s) do not meet the constraints")
}

func TestPlace_NoWorkers(t *testing.T) {
	t.Parallel()
	res := place(jobSpec(1, metadata.PlaceSpread, 1, 1), 1, nil)
	require.Contains(t, res.Reason, "no alive worker")
}

func TestPlace_SingletonPlacesOne(t *testing.T) {
	t.Parallel()
	spec := jobSpec(1, metadata.PlaceSpread, 1, 1)
	spec.Singleton = true
	res := place(spec, 3, workersN(3, 1000, 1000))
	require.Len(t, res.Placements, 1)
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
