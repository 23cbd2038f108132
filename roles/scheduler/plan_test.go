package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// counter hands out predictable allocation ids: a plan depends only on
// its view and inputs.
func counter() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("a%d", n) }
}

func aliveWorkers(n int, cpu int64) []metadata.Worker {
	ws := make([]metadata.Worker, n)
	for i := range ws {
		ws[i] = metadata.Worker{ID: fmt.Sprintf("w%d", i), Epoch: 1, State: metadata.WorkerAlive,
			Capacity: metadata.Capacity{CPUMillis: cpu, MemoryMB: 1024}}
	}
	return ws
}

func TestPlan(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	cases := []struct {
		name     string
		view     metadata.SchedView
		place    int
		unplaced int
		stop     int
	}{
		{name: "new service placed on live workers",
			view:  metadata.SchedView{Jobs: []metadata.SchedJob{*schedJob("service", 3, false, 1)}, Workers: aliveWorkers(3, 1000)},
			place: 3},
		{name: "no live worker: everything unplaced with a reason",
			view:     metadata.SchedView{Jobs: []metadata.SchedJob{*schedJob("service", 2, false, 1)}},
			unplaced: 2},
		{name: "stopped job stops its allocations",
			view: func() metadata.SchedView {
				sj := schedJob("service", 1, false, 1, alloc("x", "w0", 1, metadata.AllocRunning, run))
				sj.Job.Stopped = true
				return metadata.SchedView{Jobs: []metadata.SchedJob{*sj}, Workers: aliveWorkers(1, 1000)}
			}(),
			stop: 1},
		// The workers' --max-allocs (a label) and the allocations already
		// on them (view.Allocs) reach placement.
		{name: "max allocs label and existing allocations bound placement",
			view: func() metadata.SchedView {
				ws := aliveWorkers(2, 1000)
				for i := range ws {
					ws[i].Labels = map[string]string{metadata.MaxAllocsLabel: "4"}
				}
				return metadata.SchedView{Jobs: []metadata.SchedJob{*schedJob("service", 10, false, 1)}, Workers: ws,
					Allocs: map[string]int{"w0": 3}}
			}(),
			place: 5, unplaced: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Inputs{Now: now, Term: 4, NewID: counter()}
			p := Plan(tc.view, in)
			require.Equal(t, uint64(4), p.ControllerEpoch)
			require.Equal(t, now.UnixMilli(), p.AtMS)
			require.Len(t, p.Jobs, 1)
			require.Len(t, p.Jobs[0].Place, tc.place)
			require.Equal(t, tc.unplaced, p.Jobs[0].Unplaced)
			if tc.unplaced > 0 {
				require.NotEmpty(t, p.Jobs[0].Reason)
			}
			require.Len(t, p.Jobs[0].Stop, tc.stop)
			// The same view and inputs give the same plan.
			in.NewID = counter()
			require.Equal(t, p, Plan(tc.view, in))
		})
	}
}
