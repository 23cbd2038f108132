// Package procpace sets how many processors (GOMAXPROCS) a controller's
// goroutines run on from how busy the process is.
//
// With more than one P, every time a goroutine wakes another while a P is
// idle, the runtime wakes a second OS thread to look for work, and after
// each idle stretch its monitor thread polls every 20 µs for a
// millisecond. A controller under light load goes idle and busy again
// several times per write (the network, raft, the disk, the apply, the
// reply), so most of those wake-ups find nothing to do, and on shared
// cores (a virtual machine, or three controllers on one host) they take
// CPU from the processes that have work. With one P a woken goroutine
// runs on the thread that woke it. Measured on 2 shared cores with three
// controllers (docs/PERFORMANCE.md, "One processor while the load is
// light"): one ZooKeeper client's writes 9 % faster on one P, with a quarter
// fewer context switches per write; at 128 clients one P lengthens the
// tail, because goroutines then queue for it.
//
// So the pacer runs the process on one P while it is lightly loaded and
// on all of them (the GOMAXPROCS the runtime chose at start: the host's
// cores or the container's CPU limit) once it is not. A period raises it
// at once when the process used Up cores or more (most of one P's time),
// or when its goroutines waited for a P DelayUp or longer on average (the
// runtime's scheduling latencies: work queues); it goes back to one P
// after DownPeriods periods in a row below both Down and DelayDown. The
// lower bounds are below the upper ones, and a process needs less CPU on
// one P than on more for the same work, so the two do not chase each
// other.
//
// A collection is load the periods see too late. Marking a large heap (a
// controller holding a few hundred thousand znodes marks 240 MB) is a
// quarter to half a second of CPU; on one P it queued the requests behind
// it and set a 16-client write's p99 (docs/PERFORMANCE.md, "All
// processors for a collection"), and it is over before the periods raise
// the Ps. So a process whose live heap is at least GCHeap also takes all
// of them when its heap, growing at the rate of the last period, will
// within two periods have used GCNear of the room the collector leaves it
// before the next collection (a little before the earliest point at
// which the runtime starts one), and keeps them while that holds, through the marking; a
// small heap's marking is short and changes nothing.
//
// Another part of the process may also ask for all Ps for a while, and
// get them at once (Holds): work the runtime does where nothing preempts
// it, as debug.FreeOSMemory's return of pages, would otherwise hold the
// one P and everything queued behind it.
//
// An operator's GOMAXPROCS environment variable wins: the pacer is not
// started (see Wanted).
package procpace

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"
)

// Defaults, from the measurements in the package doc.
const (
	// DefaultInterval is the period measured: short enough that a burst
	// of load gets its Ps within a tenth of a second.
	DefaultInterval = 100 * time.Millisecond
	// DefaultUp is the CPU, in cores, at which one P becomes all of them:
	// the one P was busy 85 % of the period.
	DefaultUp = 0.85
	// DefaultDelayUp is the mean scheduling latency at which one P
	// becomes all of them. One client's writes measured 20-45 µs on one P,
	// 128 clients' 200-470 µs (on one P or two: the cores were shared).
	DefaultDelayUp = 150 * time.Microsecond
	// DefaultDown and DefaultDelayDown are what a period must stay under,
	// DefaultDownPeriods times in a row (one second), to go back to one P.
	DefaultDown        = 0.7
	DefaultDelayDown   = 75 * time.Microsecond
	DefaultDownPeriods = 10
	// MinEvents is the sampled scheduling events a period needs for its
	// mean latency to count: an idle process's few wake-ups say nothing.
	MinEvents = 20
	// DefaultGCHeap is the live heap from which a coming collection
	// raises the Ps: below it a mark takes a few milliseconds.
	DefaultGCHeap = 64 << 20
	// DefaultGCNear is how much of the room between the live heap and the
	// collector's goal the heap we read has used when the Ps go up for a
	// collection. The runtime starts marking between 0.7 and 0.95 of the
	// room by its own count of the heap, and under light load at the 0.7
	// (0.701-0.706 in a one-client run's gctrace). Our count (the heap's
	// objects) trails the runtime's, which includes the spans each P holds
	// for its allocations, so at 0.7 a slowly growing heap was seen to
	// reach the mark only once it was under way or over: four of five
	// collections of a 300 MB heap in a one-client run ran their half
	// second on one P, the writes behind them taking 12-21 ms each
	// (docs/PERFORMANCE.md, "A collection's start, seen in time").
	// 0.65 leaves a twentieth of the room for that difference.
	DefaultGCNear = 0.65
)

// Sample is what the process has used so far.
type Sample struct {
	// CPU is the process's user and system CPU time.
	CPU time.Duration
	// Wait is the scheduling latency summed over Events sampled events
	// (runtime/metrics /sched/latencies:seconds, which samples some of
	// the goroutines' transitions from runnable to running).
	Wait   time.Duration
	Events uint64
	// Heap is the heap's objects, live and not yet swept; Live is what
	// the last collection found live, Goal the heap at which the
	// collector aims to finish the next one (runtime/metrics).
	Heap, Live, Goal uint64
}

// Config configures Run. Zero fields take the defaults.
type Config struct {
	// Max is the Ps when busy (default: runtime.GOMAXPROCS(0) at start).
	Max int
	// Interval is the period measured.
	Interval time.Duration
	// Up and Down are thresholds in cores, DelayUp and DelayDown in mean
	// scheduling latency; DownPeriods is the periods in a row under both
	// lower ones before one P.
	Up, Down           float64
	DelayUp, DelayDown time.Duration
	DownPeriods        int
	// GCHeap and GCNear say when a coming collection raises the Ps (see
	// the package doc).
	GCHeap uint64
	GCNear float64
	// Read samples the process (default: getrusage and runtime/metrics).
	// Now is the clock (default time.Now).
	Read func() Sample
	Now  func() time.Time
	// Set sets GOMAXPROCS and returns the previous value (default:
	// runtime.GOMAXPROCS).
	Set func(int) int
	// Tick delivers the periods (default: a time.Ticker of Interval);
	// tests drive it by hand.
	Tick   <-chan time.Time
	Logger *slog.Logger
	// Holds, when set, are the other parts' requests for all Ps (see
	// Holds).
	Holds *Holds
}

// Wanted reports whether the pacer should run: not when the operator set
// GOMAXPROCS, whose value then stands as given, and not on one core.
func Wanted(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	return getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > 1
}

// load is one period's measure.
type load struct {
	cores float64       // CPU used over wall time
	delay time.Duration // mean scheduling latency; 0 with too few events
	gc    bool          // a collection of a large heap is near or under way
	held  bool          // another part of the process holds all Ps (Holds)
}

// governor decides the Ps from one period at a time.
type governor struct {
	cfg   Config
	procs int
	low   int // periods in a row under both lower bounds
}

// next returns the Ps for the period after one with load l.
func (g *governor) next(l load) int {
	busy := l.cores >= g.cfg.Up || l.delay >= g.cfg.DelayUp || l.gc || l.held
	light := l.cores < g.cfg.Down && l.delay < g.cfg.DelayDown && !l.gc && !l.held
	switch {
	case g.procs == 1 && busy:
		g.procs, g.low = g.cfg.Max, 0
	case g.procs > 1 && light:
		g.low++
		if g.low >= g.cfg.DownPeriods {
			g.procs, g.low = 1, 0
		}
	default:
		g.low = 0
	}
	return g.procs
}

// measure is the load between two samples taken wall apart.
func (c Config) measure(prev, cur Sample, wall time.Duration) load {
	l := load{cores: float64(cur.CPU-prev.CPU) / float64(wall), gc: c.gcNear(prev, cur)}
	if n := cur.Events - prev.Events; n >= MinEvents && cur.Wait >= prev.Wait {
		l.delay = (cur.Wait - prev.Wait) / time.Duration(n)
	}
	return l
}

// gcNear reports whether cur's heap is large and, growing as it did since
// prev, will within two periods have used GCNear of the room before its
// collector's goal: its next collection is near, or under way (the heap
// goes on growing while it marks, and falls once it is done).
func (c Config) gcNear(prev, cur Sample) bool {
	if cur.Live < c.GCHeap || cur.Goal <= cur.Live {
		return false
	}
	ahead := cur.Heap
	if cur.Heap > prev.Heap {
		ahead += 2 * (cur.Heap - prev.Heap)
	}
	return float64(ahead) >= float64(cur.Live)+c.GCNear*float64(cur.Goal-cur.Live)
}

// Run sets GOMAXPROCS from every period's load until ctx ends, then puts
// back the value it found. It starts on all Ps: a controller starting up
// restores its state, which wants them.
func Run(ctx context.Context, cfg Config) {
	cfg = cfg.withDefaults()
	tick := cfg.Tick
	if tick == nil {
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	original := cfg.Set(cfg.Max)
	defer cfg.Set(original)
	g := governor{cfg: cfg, procs: cfg.Max}
	holds := cfg.Holds
	if holds == nil {
		holds = &Holds{}
	}
	// The governor's state and Set are shared with Hold, under holds.mu.
	holds.mu.Lock()
	holds.raise = func() {
		if g.procs != cfg.Max {
			cfg.Set(cfg.Max)
			cfg.Logger.Debug("gomaxprocs changed", "procs", cfg.Max, "was", g.procs, "held", true)
		}
		g.procs, g.low = cfg.Max, 0
	}
	holds.mu.Unlock()
	defer func() {
		holds.mu.Lock()
		holds.raise = nil
		holds.mu.Unlock()
	}()
	last, lastAt := cfg.Read(), cfg.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		cur, at := cfg.Read(), cfg.Now()
		wall := at.Sub(lastAt)
		if wall <= 0 {
			continue
		}
		l := cfg.measure(last, cur, wall)
		last, lastAt = cur, at
		holds.mu.Lock()
		l.held = holds.n > 0
		prev := g.procs
		if p := g.next(l); p != prev {
			cfg.Set(p)
			cfg.Logger.Debug("gomaxprocs changed", "procs", p, "was", prev, "cpu_cores", l.cores,
				"sched_delay", l.delay, "gc_near", l.gc)
		}
		holds.mu.Unlock()
	}
}

func (c Config) withDefaults() Config {
	if c.Max <= 0 {
		c.Max = runtime.GOMAXPROCS(0)
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Up <= 0 {
		c.Up = DefaultUp
	}
	if c.Down <= 0 || c.Down > c.Up {
		c.Down = min(DefaultDown, c.Up)
	}
	if c.DelayUp <= 0 {
		c.DelayUp = DefaultDelayUp
	}
	if c.DelayDown <= 0 || c.DelayDown > c.DelayUp {
		c.DelayDown = min(DefaultDelayDown, c.DelayUp)
	}
	if c.DownPeriods <= 0 {
		c.DownPeriods = DefaultDownPeriods
	}
	if c.GCHeap == 0 {
		c.GCHeap = DefaultGCHeap
	}
	if c.GCNear <= 0 || c.GCNear > 1 {
		c.GCNear = DefaultGCNear
	}
	if c.Read == nil {
		c.Read = newProcessReader().read
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Set == nil {
		c.Set = runtime.GOMAXPROCS
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// processReader samples the process. It keeps its metrics sample, whose
// histogram the runtime then fills in place instead of allocating one
// ten times a second.
type processReader struct{ m []metrics.Sample }

func newProcessReader() *processReader {
	return &processReader{m: []metrics.Sample{
		{Name: "/sched/latencies:seconds"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/goal:bytes"},
	}}
}

// uint64Metric is a sample's value, 0 if this runtime does not have it.
func uint64Metric(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// read samples the process's CPU time (getrusage) and the runtime's
// scheduling latencies and heap.
func (p *processReader) read() Sample {
	var s Sample
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	metrics.Read(p.m)
	s.Heap, s.Live, s.Goal = uint64Metric(p.m[1]), uint64Metric(p.m[2]), uint64Metric(p.m[3])
	if p.m[0].Value.Kind() != metrics.KindFloat64Histogram {
		return s
	}
	h := p.m[0].Value.Float64Histogram()
	var sum float64
	for i, c := range h.Counts {
		// Each event counts at its bucket's middle; the open-ended
		// buckets at their finite edge.
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo
		}
		sum += float64(c) * (lo + hi) / 2
		s.Events += c
	}
	s.Wait = time.Duration(sum * float64(time.Second))
	return s
}
