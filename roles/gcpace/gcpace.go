// Package gcpace bounds how much garbage a controller process keeps.
//
// Go's collector lets the heap grow to (1 + GOGC/100) times the live data
// before it collects, and the runtime keeps about that much from the
// system. For a controller holding a large state (a million 256-byte
// values are about 400 MB live) the default GOGC of 100 means as much
// again in garbage: resident memory twice the state. Lowering GOGC for
// every heap would instead cost collections on small heaps, where the
// headroom is a few tens of megabytes anyway.
//
// So the pacer keeps the headroom near a fixed number of bytes: GOGC is
// 100 × headroom / live, within [MinPercent, MaxPercent]. A small heap
// keeps the runtime's default; a heap past the headroom collects more
// often, in proportion. Each collection marks the live heap, so the
// collector's CPU per allocated byte grows as GOGC falls: 4× at 25.
// Measured at a million keys under saturating writes, that was about a
// quarter more CPU per put and 20 % fewer puts for 30-40 % less memory
// (docs/PERFORMANCE.md, "Memory per key").
//
// Once writes stop, that garbage would stay: the runtime collects when
// the heap reaches its goal, and a quiet process takes minutes to get
// there (its forced collection comes every two minutes, and even then
// the freed pages go back to the system only gradually). So when a
// period allocates little next to the garbage the process holds, the
// pacer collects and returns the free memory at once (see releaser): a
// controller whose burst of writes is over shrinks back to its state
// within seconds.
//
// An operator's GOGC environment variable wins: the pacer is not started
// (see Wanted). GOMEMLIMIT works alongside it, as a ceiling.
package gcpace

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Defaults: a headroom that leaves the runtime's pacing alone below a live
// heap of 128 MiB, and a floor past which more collections would cost
// more CPU than the memory they save is worth.
const (
	DefaultHeadroom   = 128 << 20
	DefaultMinPercent = 25
	DefaultMaxPercent = 100
	// DefaultInterval is how often the heap is read: the live heap
	// changes with the state, slowly (a collection updates the figure);
	// a quiet period is noticed within about two.
	DefaultInterval = time.Second
	// QuietRatio defines a quiet period: it allocated less than
	// 1/QuietRatio of the garbage held. At that rate the runtime's own
	// collection is more than QuietRatio periods away, so a release at
	// most doubles the collections of a slow trickle of writes, whose
	// collections are rare anyway.
	QuietRatio = 64
	// DefaultStartGrace is how long after the pacer starts it releases
	// nothing. A starting controller restores its state (allocating
	// hundreds of megabytes in a second or two) and then goes quiet while
	// it elects and catches up: a release then would mark the whole new
	// heap (about half a second of a core at a million keys) while the
	// node answers its first requests, for little: the restore's garbage
	// is small next to the state.
	DefaultStartGrace = 30 * time.Second
)

// Config configures a Pacer. Zero fields take the defaults.
type Config struct {
	// Headroom is the garbage allowed above the live heap, in bytes.
	Headroom uint64
	// MinPercent and MaxPercent bound the GOGC the pacer sets.
	MinPercent, MaxPercent int
	// Interval is how often the live heap is read.
	Interval time.Duration
	// Live returns the heap's live bytes as the last collection marked
	// them (default: runtime/metrics /gc/heap/live:bytes).
	Live func() uint64
	// SetPercent sets GOGC and returns the previous value (default:
	// debug.SetGCPercent).
	SetPercent func(int) int
	// NoRelease turns off the release of garbage in quiet periods.
	NoRelease bool
	// StartGrace is how long after the start nothing is released
	// (default DefaultStartGrace; negative: none).
	StartGrace time.Duration
	// Heap reads the garbage held and the bytes allocated so far
	// (default: runtime/metrics); Release collects and returns the free
	// memory to the system (default: debug.FreeOSMemory, whose return of
	// the pages nothing can preempt: run it with more than one P, as
	// cli/run.go does through procpace.Holds).
	Heap    func() Heap
	Release func()
	// Tick delivers the pacer's periods (default: a time.Ticker of
	// Interval); tests drive it by hand.
	Tick   <-chan time.Time
	Logger *slog.Logger
}

// Wanted reports whether the pacer should run: not when the operator set
// GOGC, whose value then stands as given.
func Wanted(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	return getenv("GOGC") == ""
}

// Percent is the GOGC that leaves about headroom bytes above live, within
// [minP, maxP].
func Percent(live, headroom uint64, minP, maxP int) int {
	if live == 0 {
		return maxP
	}
	p := headroom * 100 / live
	switch {
	case p < uint64(minP):
		return minP
	case p > uint64(maxP):
		return maxP
	}
	return int(p)
}

// Heap is what release decides on.
type Heap struct {
	// Garbage is what the heap holds from the system beyond the live
	// bytes: dead objects not yet collected, free and unused space.
	Garbage uint64
	// Allocs is the bytes allocated since the process started.
	Allocs uint64
}

// releaser decides when a quiet period's garbage goes back.
type releaser struct {
	min        uint64 // garbage worth a collection: half the headroom
	lastAllocs uint64 // Allocs at the previous period
	sinceAt    uint64 // Allocs at the previous release
	primed     bool
	grace      int // periods left in which nothing is released
}

// due reports whether the garbage should go now: there is at least min
// of it, the last period allocated less than 1/QuietRatio of it, and at
// least min was allocated since the last release. The last condition
// keeps a heap whose unused space cannot be returned (fragmentation
// after deletes) from being collected every period.
func (r *releaser) due(h Heap) bool {
	if !r.primed {
		r.primed, r.lastAllocs, r.sinceAt = true, h.Allocs, h.Allocs
		return false
	}
	period := h.Allocs - r.lastAllocs
	r.lastAllocs = h.Allocs
	if r.grace > 0 {
		r.grace--
		return false
	}
	if h.Garbage < r.min || period*QuietRatio >= h.Garbage || h.Allocs-r.sinceAt < r.min {
		return false
	}
	r.sinceAt = h.Allocs
	return true
}

// Run sets GOGC from the live heap every period until ctx ends, then puts
// back the GOGC it found. In a quiet period it also releases the garbage
// held (unless NoRelease).
func Run(ctx context.Context, cfg Config) {
	cfg = cfg.withDefaults()
	tick := cfg.Tick
	if tick == nil {
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	// Start from the small-heap value; the first period below moves it.
	original := cfg.SetPercent(cfg.MaxPercent)
	current := cfg.MaxPercent
	defer func() { cfg.SetPercent(original) }()
	rel := releaser{min: cfg.Headroom / 2, grace: int(cfg.StartGrace / cfg.Interval)}
	for {
		if !cfg.NoRelease {
			if h := cfg.Heap(); rel.due(h) {
				start := time.Now()
				cfg.Release()
				cfg.Logger.Debug("gc released a quiet period's garbage", "garbage_bytes", h.Garbage,
					"took", time.Since(start))
			}
		}
		live := cfg.Live()
		if p := Percent(live, cfg.Headroom, cfg.MinPercent, cfg.MaxPercent); p != current {
			cfg.SetPercent(p)
			cfg.Logger.Debug("gc pacing", "gogc", p, "was", current, "live_bytes", live, "headroom_bytes", cfg.Headroom)
			current = p
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

func (c Config) withDefaults() Config {
	if c.Headroom == 0 {
		c.Headroom = DefaultHeadroom
	}
	if c.MinPercent <= 0 {
		c.MinPercent = DefaultMinPercent
	}
	if c.MaxPercent <= 0 {
		c.MaxPercent = DefaultMaxPercent
	}
	if c.MinPercent > c.MaxPercent {
		c.MinPercent = c.MaxPercent
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Live == nil {
		c.Live = liveHeap
	}
	if c.SetPercent == nil {
		c.SetPercent = debug.SetGCPercent
	}
	if c.StartGrace == 0 {
		c.StartGrace = DefaultStartGrace
	}
	if c.Heap == nil {
		c.Heap = readHeap
	}
	if c.Release == nil {
		c.Release = debug.FreeOSMemory
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// liveHeap reads the live heap the last collection marked.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// readHeap reads the garbage held and the bytes allocated. Garbage is the
// heap's objects (live and dead), free and unused space, less the live
// bytes; pages already returned to the system are not in it.
func readHeap() Heap {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(s)
	var v [5]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	h := Heap{Allocs: v[4]}
	if held := v[0] + v[1] + v[2]; held > v[3] {
		h.Garbage = held - v[3]
	}
	return h
}
