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
	// DefaultInterval is how often the live heap is read: it changes with
	// the state, slowly; a collection updates the figure.
	DefaultInterval = 5 * time.Second
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

// Run sets GOGC from the live heap every period until ctx ends, then puts
// back the GOGC it found.
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
	for {
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
