package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseRestartArgs(t *testing.T) {
	c, err := parseRestartArgs([]string{"-corral", "http://a,http://b,http://c"})
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.keys != 1000000 || c.trials != 3 || c.writers != 64 || c.valueSize != 256 || c.signal != "TERM" {
		t.Errorf("defaults: keys %d, trials %d, writers %d, value %d, signal %s; want 1000000, 3, 64, 256, TERM",
			c.keys, c.trials, c.writers, c.valueSize, c.signal)
	}
	c, err = parseRestartArgs([]string{"-keys", "20000", "-trials", "2", "-signal", "KILL", "-zk", "h:1"})
	if err != nil || c.keys != 20000 || c.trials != 2 || c.signal != "KILL" || c.zkEP != "h:1" {
		t.Errorf("-keys 20000 -trials 2 -signal KILL: got %+v, %v", c, err)
	}
	bad := map[string][]string{
		"no system":        {},
		"no keys":          {"-keys", "0", "-etcd", "h:1"},
		"too many keys":    {"-keys", "10000001", "-etcd", "h:1"},
		"no trial":         {"-trials", "0", "-etcd", "h:1"},
		"too many trials":  {"-trials", "101", "-etcd", "h:1"},
		"other signal":     {"-signal", "HUP", "-etcd", "h:1"},
		"stray argument":   {"-etcd", "h:1", "20000"},
		"not a number":     {"-keys", "many", "-etcd", "h:1"},
		"poll too fast":    {"-poll", "100us", "-etcd", "h:1"},
		"no writers":       {"-writers", "0", "-etcd", "h:1"},
		"no attempts open": {"-in-flight", "0", "-etcd", "h:1"},
	}
	for name, args := range bad {
		if _, err := parseRestartArgs(args); err == nil {
			t.Errorf("%s (%q): no error", name, args)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1000000: "1,000,000", -4862: "-4,862"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMedianText(t *testing.T) {
	limit := 120 * time.Second
	cases := []struct {
		ms   []float64
		ok   []bool
		want string
	}{
		{nil, nil, "–"},
		{[]float64{2500}, []bool{true}, "2.50 s"},
		{[]float64{3000, 1000, 2000}, []bool{true, true, true}, "2.00 s"},
		{[]float64{3000, 1000, 2000, 4000}, []bool{true, true, true, true}, "2.50 s"},
		// A trial without success is longer than any: it moves the median up, not down.
		{[]float64{120000, 1000, 2000}, []bool{false, true, true}, "2.00 s"},
		{[]float64{120000, 120000, 2000}, []bool{false, false, true}, ">120 s"},
		{[]float64{120000, 1000}, []bool{false, true}, ">120 s"},
	}
	for _, c := range cases {
		if got := medianText(c.ms, c.ok, limit); got != c.want {
			t.Errorf("medianText(%v, %v) = %q, want %q", c.ms, c.ok, got, c.want)
		}
	}
}

func TestBytesPerKey(t *testing.T) {
	nodes := []nodeRSS{{BeforeMiB: 50, AfterMiB: 50 + 800}, {BeforeMiB: 40, AfterMiB: 40 + 810}, {BeforeMiB: 60, AfterMiB: 60 + 790}}
	// 800 MiB over 1 MiB keys is 800 bytes per key.
	if got := bytesPerKey(nodes, 1<<20); got != 800 {
		t.Errorf("bytesPerKey = %v, want 800", got)
	}
	nodes[1].AfterMiB = 0 // unreadable: no figure rather than a wrong one
	if got := bytesPerKey(nodes, 1<<20); got != 0 {
		t.Errorf("bytesPerKey with a node unread = %v, want 0", got)
	}
}

func TestPrintRestartTable(t *testing.T) {
	runs := []*restartRun{
		{System: "corral", Keys: 1000000, Loaded: 1000000, LoadSeconds: 250, LoadPerS: 4000.7, BytesPerKey: 812.4,
			Nodes: []nodeRSS{{AfterMiB: 830}, {AfterMiB: 801.6}, {AfterMiB: 792}},
			Trials: []restartTrial{
				{Trial: 1, ReadMS: 2310, ReadOK: true, WriteMS: 2320, WriteOK: true, RSSAfterMiB: []float64{700, 701, 702}},
				{Trial: 2, ReadMS: 2610, ReadOK: true, WriteMS: 120000, WriteOK: false, RSSAfterMiB: []float64{710, 711, 712}},
				{Trial: 3, ReadMS: 2400, ReadOK: true, WriteMS: 2450, WriteOK: true, RSSAfterMiB: []float64{720, 721, 722}},
			}},
		{System: "zk", Keys: 1000000, Loaded: 5000, LoadSeconds: 2, LoadPerS: 2500, Error: "load: key 5000 failed"},
	}
	var b strings.Builder
	printRestartTable(&b, runs, 120*time.Second)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want a header, a rule and 2 rows:\n%s", len(lines), b.String())
	}
	want := "| corral | 1,000,000 | 4,000/s | 830, 802, 792 MiB | 812 | 2.310, 2.610, 2.400 s | 2.40 s | 2.320, >120.00, 2.450 s | 2.45 s | 720, 721, 722 MiB |"
	if lines[2] != want {
		t.Errorf("corral row:\n got %s\nwant %s", lines[2], want)
	}
	want = "| zk | 5,000 of 1,000,000 (load failed) | 2,500/s | – | – | – | – | – | – | – |"
	if lines[3] != want {
		t.Errorf("zk row:\n got %s\nwant %s", lines[3], want)
	}
}

func TestLoadKeys(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	var calls atomic.Int64
	put := func(_ context.Context, w, i int) error {
		if i%4 != w%4 {
			t.Errorf("writer %d got key %d", w, i)
		}
		// Every 100th key fails its first try: it must be retried, and written once more.
		if calls.Add(1); i%100 == 0 {
			mu.Lock()
			defer mu.Unlock()
			seen[i]++
			if seen[i] == 1 {
				return errors.New("refused")
			}
			return nil
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	}
	res, err := loadKeys(1000, 4, 3, time.Second, put, func(int, time.Duration) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.done != 1000 || res.retries != 10 || len(seen) != 1000 {
		t.Errorf("done %d, retries %d, distinct keys %d; want 1000, 10, 1000", res.done, res.retries, len(seen))
	}

	// A key that fails every try stops the load; the writers do not go on past it.
	calls.Store(0)
	res, err = loadKeys(1000, 4, 2, time.Second, func(_ context.Context, _, i int) error {
		calls.Add(1)
		if i == 10 {
			return errors.New("down")
		}
		return nil
	}, func(int, time.Duration) {})
	if err == nil || !strings.Contains(err.Error(), "key 10 failed 2 tries") {
		t.Errorf("error %v, want key 10 failed 2 tries", err)
	}
	if res.done >= 1000 || calls.Load() >= 1000 {
		t.Errorf("load went on after a key failed: %d done, %d calls", res.done, calls.Load())
	}
}

func TestFirstSuccess(t *testing.T) {
	// Fails until the third attempt.
	var n atomic.Int64
	start := time.Now()
	r := firstSuccess(start, time.Millisecond, time.Second, 10*time.Second, 4, func(context.Context) error {
		if n.Add(1) < 3 {
			return errors.New("refused")
		}
		return nil
	}, nil)
	if !r.ok || r.attempts < 3 || r.lastErr != "refused" || r.after <= 0 || r.after > time.Since(start) {
		t.Errorf("fails twice, then succeeds: got %+v", r)
	}

	// The first two attempts hang until their timeout; the third, started while they hang, succeeds.
	n.Store(0)
	r = firstSuccess(time.Now(), time.Millisecond, time.Minute, 10*time.Minute, 4, func(ctx context.Context) error {
		if n.Add(1) <= 2 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}, nil)
	if !r.ok || r.attempts < 3 || r.after >= time.Minute {
		t.Errorf("two attempts hang, the third succeeds: got %+v, want ok after 3 attempts, before the hung ones' timeout", r)
	}

	// Never: the figure is the limit, and why is kept.
	r = firstSuccess(time.Now(), time.Millisecond, time.Second, 30*time.Millisecond, 2, func(context.Context) error {
		return errors.New("no leader")
	}, nil)
	if r.ok || r.after != 30*time.Millisecond || r.lastErr != "no leader" || r.attempts < 1 {
		t.Errorf("never succeeds: got %+v", r)
	}
}
