package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Issue 21, item 5: a snapshot at a million keys must not push the
// 16-client p99 above 100 ms while it runs. After the restart trials
// (so that these writes add nothing to the log a restart replays),
// compare restart writes with -snapshot-writers clients to random loaded
// keys in -snapshot-windows windows of -snapshot-window each, and reads
// every controller's corral_raft_snapshots_total around each window. The
// counter moves when a snapshot ends, and a snapshot at a million keys
// takes less than a window (1.3-2.4 s against 3 s), so a window in which
// it moved, and the window before it, are the ones a snapshot may have
// overlapped; both are counted as such. That marks some quiet windows
// too, which can only lower the figure for the quiet ones: every window
// a snapshot overlapped is among the marked.

// snapWindow is one window of writes.
type snapWindow struct {
	Index     int     `json:"index"`
	Ops       int     `json:"ops"`
	Errors    int     `json:"errors"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
	Snapshots int     `json:"snapshots_ended"` // over all controllers, during this window
	Marked    bool    `json:"snapshot_may_overlap"`
}

// snapshotsTotal sums corral_raft_snapshots_total over the controllers at
// eps (HTTP URLs); an unreadable one is an error, since a missed snapshot
// would hide the window it slowed.
func snapshotsTotal(ctx context.Context, hc *http.Client, eps []string) (int, error) {
	total := 0
	for _, ep := range eps {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(ep, "/")+"/metrics", nil)
		if err != nil {
			return 0, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, fmt.Errorf("%s/metrics: %w", ep, err)
		}
		n, err := metricValue(bufio.NewScanner(resp.Body), "corral_raft_snapshots_total")
		_ = resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("%s/metrics: %w", ep, err)
		}
		total += int(n)
	}
	return total, nil
}

// metricValue is the value of the unlabelled series name in a Prometheus
// text exposition.
func metricValue(sc *bufio.Scanner, name string) (float64, error) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s series", name)
}

// markSnapshotWindows marks each window in which a snapshot ended, and the
// one before it.
func markSnapshotWindows(ws []snapWindow) {
	for i := range ws {
		if ws[i].Snapshots > 0 {
			ws[i].Marked = true
			if i > 0 {
				ws[i-1].Marked = true
			}
		}
	}
}

// runSnapshotWindows writes to random keys of n with writers clients
// through put, window by window.
func runSnapshotWindows(eps []string, put func(ctx context.Context, w, i int, value []byte) error, n, writers, windows int,
	window time.Duration, value []byte) ([]snapWindow, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	before, err := snapshotsTotal(context.Background(), hc, eps)
	if err != nil {
		return nil, err
	}
	out := make([]snapWindow, 0, windows)
	for k := 1; k <= windows; k++ {
		ctx, cancel := context.WithTimeout(context.Background(), window)
		lat, errs := timedWrites(ctx, writers, func(ctx context.Context, w, _ int) error {
			return put(ctx, w, rand.IntN(n), value)
		})
		cancel()
		after, err := snapshotsTotal(context.Background(), hc, eps)
		if err != nil {
			return out, err
		}
		slices.Sort(lat)
		out = append(out, snapWindow{Index: k, Ops: len(lat), Errors: errs, P50MS: ms(pctOf(lat, 0.50)),
			P99MS: ms(pctOf(lat, 0.99)), MaxMS: ms(pctOf(lat, 1)), Snapshots: after - before})
		before = after
	}
	markSnapshotWindows(out)
	return out, nil
}

// snapshotWindowsLine sums the windows up: the worst p99 among the marked
// ones and the range among the rest.
func snapshotWindowsLine(ws []snapWindow) string {
	var marked, quiet []float64
	for _, w := range ws {
		if w.Marked {
			marked = append(marked, w.P99MS)
		} else {
			quiet = append(quiet, w.P99MS)
		}
	}
	s := fmt.Sprintf("%d windows, %d a snapshot may have overlapped", len(ws), len(marked))
	if len(marked) > 0 {
		s += fmt.Sprintf(": p99 %.1f-%.1f ms", slices.Min(marked), slices.Max(marked))
	}
	if len(quiet) > 0 {
		s += fmt.Sprintf("; the others %.1f-%.1f ms", slices.Min(quiet), slices.Max(quiet))
	}
	return s
}
