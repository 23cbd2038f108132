package procpace

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testConfig() Config {
	return Config{Max: 4}.withDefaults()
}

var (
	idle   = load{cores: 0.01}
	light  = load{cores: 0.5, delay: 30 * time.Microsecond}  // one client's writes
	middle = load{cores: 0.75, delay: 30 * time.Microsecond} // between the bounds
	queued = load{cores: 0.5, delay: 300 * time.Microsecond} // 128 clients on shared cores
	hot    = load{cores: 0.95}                               // one P nearly full
)

func TestGovernorGoesToOnePAfterASecondOfLightLoad(t *testing.T) {
	g := governor{cfg: testConfig(), procs: 4}
	for i := 1; i < DefaultDownPeriods; i++ {
		require.Equal(t, 4, g.next(light), "period %d", i)
	}
	require.Equal(t, 1, g.next(light))
	require.Equal(t, 1, g.next(idle))
}

func TestGovernorLightPeriodsMustFollowEachOther(t *testing.T) {
	g := governor{cfg: testConfig(), procs: 4}
	for range DefaultDownPeriods - 1 {
		g.next(light)
	}
	require.Equal(t, 4, g.next(middle), "a period above Down starts the count again")
	for range DefaultDownPeriods - 1 {
		require.Equal(t, 4, g.next(light))
	}
	require.Equal(t, 1, g.next(light))
}

func TestGovernorRaisesAtOnce(t *testing.T) {
	for name, l := range map[string]load{"cpu": hot, "scheduling delay": queued} {
		g := governor{cfg: testConfig(), procs: 1}
		require.Equal(t, 4, g.next(l), name)
		require.Equal(t, 4, g.next(middle), name)
	}
}

func TestGovernorKeepsOnePBetweenTheBounds(t *testing.T) {
	// A load between the bounds changes nothing either way: that is what
	// keeps the two decisions from chasing each other.
	g := governor{cfg: testConfig(), procs: 1}
	for range 3 * DefaultDownPeriods {
		require.Equal(t, 1, g.next(middle))
	}
	g = governor{cfg: testConfig(), procs: 4}
	for range 3 * DefaultDownPeriods {
		require.Equal(t, 4, g.next(middle))
	}
	q := load{cores: 0.3, delay: 100 * time.Microsecond} // delay between its bounds
	for range 3 * DefaultDownPeriods {
		require.Equal(t, 4, g.next(q))
	}
}

func TestMeasure(t *testing.T) {
	prev := Sample{CPU: time.Second, Wait: time.Millisecond, Events: 100}
	cur := Sample{CPU: time.Second + 50*time.Millisecond, Wait: 5 * time.Millisecond, Events: 140}
	l := testConfig().measure(prev, cur, 100*time.Millisecond)
	require.InDelta(t, 0.5, l.cores, 1e-9)
	require.Equal(t, 100*time.Microsecond, l.delay) // 4 ms over 40 events

	few := cur
	few.Events = prev.Events + MinEvents - 1
	require.Zero(t, testConfig().measure(prev, few, 100*time.Millisecond).delay, "too few events to judge")
}

func TestWanted(t *testing.T) {
	require.False(t, Wanted(func(k string) string {
		if k == "GOMAXPROCS" {
			return "2"
		}
		return ""
	}), "an operator's GOMAXPROCS stands")
}

// fakeProcess is the process Run sees: its samples and the Ps it sets.
type fakeProcess struct {
	mu    sync.Mutex
	now   time.Time
	s     Sample
	sets  chan int
	reads chan struct{} // one per sample (Run reads the clock last), so the test moves on only after it
	gmp   int
}

func (f *fakeProcess) read() Sample { f.mu.Lock(); defer f.mu.Unlock(); return f.s }
func (f *fakeProcess) clock() time.Time {
	f.mu.Lock()
	now := f.now
	f.mu.Unlock()
	f.reads <- struct{}{}
	return now
}
func (f *fakeProcess) set(n int) int {
	f.mu.Lock()
	old := f.gmp
	f.gmp = n
	f.mu.Unlock()
	f.sets <- n
	return old
}

// period advances the fake by 100 ms with load l.
func (f *fakeProcess) period(l load) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(100 * time.Millisecond)
	f.s.CPU += time.Duration(l.cores * float64(100*time.Millisecond))
	f.s.Events += 100
	f.s.Wait += 100 * l.delay
}

// runFake runs the pacer on a fake process of 2 Ps with cfg (its Max,
// Read, Now, Set and Tick are the fake's). next returns the next
// GOMAXPROCS set; period gives the pacer one period of load l and waits
// until it read it; stop ends the pacer and waits for it.
func runFake(t *testing.T, cfg Config) (f *fakeProcess, next func() int, period func(load), stop func()) {
	f = &fakeProcess{now: time.Unix(1000, 0), sets: make(chan int, 16), reads: make(chan struct{}), gmp: 2}
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	cfg.Max, cfg.Read, cfg.Now, cfg.Set, cfg.Tick = 2, f.read, f.clock, f.set, tick
	go func() {
		defer close(done)
		Run(ctx, cfg)
	}()
	next = func() int {
		select {
		case n := <-f.sets:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no GOMAXPROCS set within 10s")
			return 0
		}
	}
	period = func(l load) {
		f.period(l)
		tick <- time.Time{}
		<-f.reads
	}
	stop = func() {
		cancel()
		<-done
	}
	return f, next, period, stop
}

func TestRunSetsTheProcsAndPutsThemBack(t *testing.T) {
	f, next, period, stop := runFake(t, Config{})
	require.Equal(t, 2, next(), "starts on all Ps")
	<-f.reads // the first sample
	for range DefaultDownPeriods {
		period(light)
	}
	require.Equal(t, 1, next(), "a second of light load")
	period(queued)
	require.Equal(t, 2, next(), "goroutines queue for the one P")
	period(middle)
	stop()
	require.Equal(t, 2, next(), "the value found at start is put back")
	require.Empty(t, f.sets)
}

func TestReadProcessSeesCPUAndScheduling(t *testing.T) {
	r := newProcessReader()
	before := r.read()
	deadline := time.Now().Add(10 * time.Second)
	var after Sample
	for {
		// Busy goroutines that wake each other: CPU and scheduling events.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				x := 0
				for i := range 2_000_000 {
					x += i
				}
				_ = x
			})
		}
		wg.Wait()
		after = r.read()
		if after.CPU > before.CPU && after.Events > before.Events || time.Now().After(deadline) {
			break
		}
	}
	require.Greater(t, after.CPU, before.CPU)
	require.Greater(t, after.Events, before.Events)
	require.GreaterOrEqual(t, after.Wait, before.Wait)
}
