package main

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	text := "cpu  100 5 50 800 40 3 2 0 7 1\ncpu0 50 2 25 400 20 1 1 0 0 0\n"
	got, err := parseProcStat(text)
	if err != nil {
		t.Fatal(err)
	}
	// user+nice+system+idle+iowait+irq+softirq+steal; guest is inside user.
	if got.idle != 800 || got.total != 1000 {
		t.Errorf("got idle %d of %d, want 800 of 1000", got.idle, got.total)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2", "cpu 1 2 x 4 5"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestIdleBetween(t *testing.T) {
	a := cpuTimes{idle: 800, total: 1000}
	if got := idleBetween(a, cpuTimes{idle: 890, total: 1200}); got != 0.45 {
		t.Errorf("got %v, want 0.45", got)
	}
	if got := idleBetween(a, a); got != 1 {
		t.Errorf("no time passed: got %v, want 1", got)
	}
}

func TestWaitQuietOffAndOnThisMachine(t *testing.T) {
	if q := waitQuiet(0, time.Second, time.Minute); !q.Quiet || q.WaitMS != 0 {
		t.Errorf("off: got %+v, want quiet at once", q)
	}
	// A 0.01 threshold is met by any machine in one window: the reading of
	// the real /proc/stat works.
	q := waitQuiet(0.01, 50*time.Millisecond, 5*time.Second)
	if q.Idle < 0 || q.Idle > 1 {
		t.Errorf("idle %v out of [0, 1]: %+v", q.Idle, q)
	}
}
