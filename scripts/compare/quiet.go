package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Waiting for a quiet machine. The three systems share this machine's two
// cores, so whatever one left running after its turn (ZooKeeper's
// snapshot of a million znodes, a JVM collecting, Pebble compacting, the
// kernel writing back dirty pages) is charged to the next one's figure: a
// restart of corral right after ZooKeeper's load once took 4.44 s against
// 2.39-2.75 s in the trials after it (docs/PERFORMANCE.md). So before each
// measurement the driver waits, up to a limit, for a second in which the
// machine's CPUs were at least a given fraction idle, and records how
// idle that second was and how long the wait took. Every system gets the
// same wait; a machine that never quietens is measured anyway and says so.

// cpuTimes is the first ("cpu") line of /proc/stat: jiffies in each state,
// summed over the CPUs.
type cpuTimes struct {
	idle, total uint64
}

// parseProcStat reads the "cpu" line of /proc/stat's text. Idle is the
// idle column alone: a CPU waiting for the disk (iowait) is idle for the
// scheduler but says the disk is busy, which a restart would feel. Guest
// time is already inside user and nice, so it is not added again.
func parseProcStat(text string) (cpuTimes, error) {
	line, _, _ := strings.Cut(text, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, errors.New("/proc/stat: no cpu line first")
	}
	var t cpuTimes
	for i, s := range f[1:] {
		if i >= 8 { // guest, guest_nice
			break
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat: column %d: %w", i+1, err)
		}
		t.total += v
		if i == 3 {
			t.idle = v
		}
	}
	return t, nil
}

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseProcStat(string(b))
}

// idleBetween is the idle fraction of the CPUs between two readings (1
// when no time passed).
func idleBetween(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 1
	}
	return float64(b.idle-a.idle) / float64(b.total-a.total)
}

// quietResult is what waitQuiet saw: the idle fraction of the last window
// and how long the wait took.
type quietResult struct {
	Idle   float64 `json:"idle"`
	WaitMS float64 `json:"wait_ms"`
	Quiet  bool    `json:"quiet"` // false: the limit passed first
}

// waitQuiet returns after the first window in which the CPUs were at
// least minIdle idle, or once limit has passed. minIdle 0 returns at once.
func waitQuiet(minIdle float64, window, limit time.Duration) quietResult {
	if minIdle <= 0 {
		return quietResult{Idle: 1, Quiet: true}
	}
	start := time.Now()
	prev, err := readCPUTimes()
	if err != nil {
		return quietResult{Idle: -1}
	}
	for {
		time.Sleep(window) // a measuring window, not a wait for a condition
		cur, err := readCPUTimes()
		if err != nil {
			return quietResult{Idle: -1, WaitMS: ms(time.Since(start))}
		}
		idle := idleBetween(prev, cur)
		if idle >= minIdle || time.Since(start) >= limit {
			return quietResult{Idle: idle, WaitMS: ms(time.Since(start)), Quiet: idle >= minIdle}
		}
		prev = cur
	}
}

func (q quietResult) String() string {
	if q.Idle < 0 {
		return "idle unknown"
	}
	s := fmt.Sprintf("%.0f%% idle after %.1fs", q.Idle*100, q.WaitMS/1000)
	if !q.Quiet {
		s += " (never quiet)"
	}
	return s
}

// quietFlags are -quiet-idle and -quiet-within, the same for every
// command that waits for quiet.
type quietFlags struct {
	idle   float64
	within time.Duration
}

// register adds the two flags to fs; before names when the wait comes.
func (q *quietFlags) register(fs *flag.FlagSet, before string, within time.Duration) {
	fs.Float64Var(&q.idle, "quiet-idle", 0.8, before+", wait for a second with the CPUs this idle (0-0.99; 0: no wait)")
	fs.DurationVar(&q.within, "quiet-within", within, "how long to wait for that quiet second before measuring anyway")
}

func (q quietFlags) check() error {
	if q.idle < 0 || q.idle > 0.99 || q.within < 0 || q.within > 10*time.Minute {
		return fmt.Errorf("-quiet-idle: want 0-0.99, got %g; -quiet-within: want up to 10m, got %s", q.idle, q.within)
	}
	return nil
}

// wait is waitQuiet with the flags' values and one-second windows.
func (q quietFlags) wait() quietResult { return waitQuiet(q.idle, time.Second, q.within) }
