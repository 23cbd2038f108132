package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMetricValue(t *testing.T) {
	text := "# HELP corral_raft_snapshots_total x\n# TYPE corral_raft_snapshots_total counter\n" +
		"corral_raft_snapshots_total_other 9\ncorral_raft_snapshots_total 7\n"
	v, err := metricValue(bufio.NewScanner(strings.NewReader(text)), "corral_raft_snapshots_total")
	if err != nil || v != 7 {
		t.Errorf("got %v, %v; want 7", v, err)
	}
	if _, err := metricValue(bufio.NewScanner(strings.NewReader("up 1\n")), "corral_raft_snapshots_total"); err == nil {
		t.Error("a missing series gave no error")
	}
}

func TestMarkSnapshotWindows(t *testing.T) {
	ws := []snapWindow{{Snapshots: 1}, {}, {}, {Snapshots: 2}, {}}
	markSnapshotWindows(ws)
	var got []bool
	for _, w := range ws {
		got = append(got, w.Marked)
	}
	if fmt.Sprint(got) != "[true false true true false]" {
		t.Errorf("marked %v, want the windows a snapshot ended in and the ones before them", got)
	}
	ws[0].P99MS, ws[1].P99MS, ws[2].P99MS, ws[3].P99MS, ws[4].P99MS = 40, 10, 55, 60, 12
	if got, want := snapshotWindowsLine(ws), "5 windows, 3 a snapshot may have overlapped: p99 40.0-60.0 ms; the others 10.0-12.0 ms"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRunSnapshotWindows drives the windows against a fake controller whose
// counter moves during the second window.
func TestRunSnapshotWindows(t *testing.T) {
	var snaps atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "corral_raft_snapshots_total %d\n", snaps.Load())
	}))
	defer srv.Close()
	var puts atomic.Int64
	window := 0
	put := func(ctx context.Context, w, i int, value []byte) error {
		if i < 0 || i >= 100 || len(value) != 3 {
			return fmt.Errorf("bad put %d %d", i, len(value))
		}
		if puts.Add(1) == 1 && window == 1 {
			snaps.Add(1)
		}
		return nil
	}
	ws, err := runSnapshotWindows([]string{srv.URL}, func(ctx context.Context, w, i int, v []byte) error {
		return put(ctx, w, i, v)
	}, 100, 2, 1, 50*time.Millisecond, []byte("abc"))
	if err != nil || len(ws) != 1 || ws[0].Ops == 0 || ws[0].Snapshots != 0 || ws[0].Marked {
		t.Fatalf("one quiet window: %+v, %v", ws, err)
	}
	window = 1
	puts.Store(0)
	ws, err = runSnapshotWindows([]string{srv.URL, srv.URL}, put, 100, 2, 2, 50*time.Millisecond, []byte("abc"))
	if err != nil || len(ws) != 2 || ws[0].Snapshots != 2 || !ws[0].Marked || ws[1].Marked {
		t.Fatalf("a snapshot in the first window (counted on both endpoints): %+v, %v", ws, err)
	}
	if _, err := runSnapshotWindows([]string{srv.URL + "/nothing"}, put, 100, 1, 1, 10*time.Millisecond, []byte("abc")); err == nil {
		t.Error("an endpoint without the counter gave no error")
	}
}

func TestGoalsSnapshotWindows(t *testing.T) {
	res := restartResult{Keys: 1000000, Systems: []*restartRun{{System: "corral", SnapWriters: 16,
		SnapWindows: []snapWindow{{P99MS: 120, Snapshots: 1, Marked: true}, {P99MS: 20}}}}}
	g := restartGoals(res)
	if len(g) != 3 || g[2].of != 1 || g[2].met != 0 || !strings.Contains(g[2].name, "16 writers") {
		t.Errorf("a 120 ms window with a snapshot: %+v", g)
	}
	res.Systems[0].SnapWindows[0].P99MS = 80
	if g := restartGoals(res); g[2].met != 1 {
		t.Errorf("an 80 ms window with a snapshot: %+v", g[2])
	}
	res.Systems[0].SnapWindows[0].Marked = false
	if g := restartGoals(res); g[2].of != 0 || g[2].verdict() != "not measured" {
		t.Errorf("no snapshot in any window: %+v", g[2])
	}
}
