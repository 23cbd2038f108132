package gcpace

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{40 * mib, 100},   // small heap: the runtime's default
		{128 * mib, 100},  // headroom = live
		{256 * mib, 50},   // half
		{400 * mib, 32},   // a million 256-byte values
		{1024 * mib, 25},  // the floor
		{10240 * mib, 25}, // and no lower
	} {
		require.Equal(t, tc.want, Percent(tc.live, 128*mib, 25, 100), "live %d MiB", tc.live/mib)
	}
}

func TestWanted(t *testing.T) {
	require.True(t, Wanted(func(string) string { return "" }))
	require.False(t, Wanted(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}))
}

// fakeRuntime records what the pacer sets.
type fakeRuntime struct {
	mu   sync.Mutex
	live uint64
	gogc int
	sets []int
}

func (f *fakeRuntime) Live() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.live }
func (f *fakeRuntime) SetPercent(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.gogc
	f.gogc = p
	f.sets = append(f.sets, p)
	return old
}
func (f *fakeRuntime) setLive(b uint64) { f.mu.Lock(); f.live = b; f.mu.Unlock() }
func (f *fakeRuntime) current() int     { f.mu.Lock(); defer f.mu.Unlock(); return f.gogc }

// TestRunFollowsTheLiveHeap: GOGC falls as the state grows, rises when it
// shrinks, and is put back when the pacer stops.
func TestRunFollowsTheLiveHeap(t *testing.T) {
	f := &fakeRuntime{gogc: 100, live: 10 << 20}
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Headroom: 100 << 20, Live: f.Live, SetPercent: f.SetPercent, Tick: tick})
	}()
	step := func(live uint64) {
		f.setLive(live)
		tick <- time.Time{}
		tick <- time.Time{} // the second send returns once the first period is done
	}
	step(400 << 20)
	require.Equal(t, 25, f.current())
	step(200 << 20)
	require.Equal(t, 50, f.current())
	step(50 << 20)
	require.Equal(t, 100, f.current())
	cancel()
	<-done
	require.Equal(t, 100, f.current(), "the GOGC found at the start is put back")
}

// TestRunSetsTheRuntime: with the real runtime, a heap past the headroom
// lowers GOGC, and stopping puts the old value back.
func TestRunSetsTheRuntime(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	runtime.GC() // so the live heap has been measured
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tick := make(chan time.Time)
	go func() {
		defer close(done)
		// One byte of headroom: any live heap is far past it.
		Run(ctx, Config{Headroom: 1, MinPercent: 30, Tick: tick})
	}()
	tick <- time.Time{}
	tick <- time.Time{}
	got := debug.SetGCPercent(30) // read (and keep) what the pacer set
	require.Equal(t, 30, got)
	cancel()
	<-done
	require.Equal(t, 100, debug.SetGCPercent(100))
}

// TestReleaseOnlyInAQuietPeriod: garbage goes back when a period
// allocated little next to it, not during a burst, not when there is
// little of it, and not again before as much has been allocated anew.
func TestReleaseOnlyInAQuietPeriod(t *testing.T) {
	const mib = 1 << 20
	r := releaser{min: 64 * mib}
	steps := []struct {
		name string
		h    Heap
		want bool
	}{
		{"first period primes", Heap{Garbage: 100 * mib, Allocs: 0}, false},
		{"a burst of writes", Heap{Garbage: 100 * mib, Allocs: 200 * mib}, false},
		{"quiet, 100 MiB held", Heap{Garbage: 100 * mib, Allocs: 201 * mib}, true},
		{"collected", Heap{Garbage: 2 * mib, Allocs: 201 * mib}, false},
		{"unreturnable space, nothing allocated since", Heap{Garbage: 100 * mib, Allocs: 202 * mib}, false},
		{"writes again", Heap{Garbage: 90 * mib, Allocs: 300 * mib}, false},
		{"quiet again", Heap{Garbage: 90 * mib, Allocs: 301 * mib}, true},
		{"quiet, little garbage", Heap{Garbage: 10 * mib, Allocs: 400 * mib}, false},
		{"a trickle of 1/64 of the garbage is not quiet", Heap{Garbage: 128 * mib, Allocs: 402 * mib}, false},
	}
	for _, s := range steps {
		require.Equal(t, s.want, r.due(s.h), s.name)
	}
}

// TestNoReleaseDuringTheStartGrace: the quiet that follows a start's
// restore is not a release's moment.
func TestNoReleaseDuringTheStartGrace(t *testing.T) {
	const mib = 1 << 20
	r := releaser{min: 64 * mib, grace: 2}
	quiet := func(allocs uint64) Heap { return Heap{Garbage: 100 * mib, Allocs: allocs} }
	require.False(t, r.due(quiet(0)), "first period primes")
	require.False(t, r.due(quiet(500*mib)), "restoring")
	require.False(t, r.due(quiet(501*mib)), "quiet, but within the grace")
	require.True(t, r.due(quiet(502*mib)), "quiet after it")
}

// TestRunReleasesInAQuietPeriod: Run releases when due, and never with
// NoRelease.
func TestRunReleasesInAQuietPeriod(t *testing.T) {
	const mib = 1 << 20
	for _, off := range []bool{false, true} {
		f := &fakeRuntime{gogc: 100, live: 10 * mib}
		var mu sync.Mutex
		// Every read of the heap is one period, which allocated rate.
		heap, rate := Heap{Garbage: 100 * mib}, uint64(200*mib)
		released := 0
		tick := make(chan time.Time)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Run(ctx, Config{Live: f.Live, SetPercent: f.SetPercent, Tick: tick, NoRelease: off, StartGrace: -1,
				Heap: func() Heap {
					mu.Lock()
					defer mu.Unlock()
					heap.Allocs += rate
					return heap
				},
				Release: func() { mu.Lock(); defer mu.Unlock(); released++; heap.Garbage = mib }})
		}()
		periods := func(r uint64) {
			mu.Lock()
			rate = r
			mu.Unlock()
			for range 3 {
				tick <- time.Time{}
			}
		}
		periods(200 * mib) // a burst
		mu.Lock()
		require.Zero(t, released, "nothing is released during a burst")
		mu.Unlock()
		periods(mib) // quiet: released once
		cancel()
		<-done
		want := 1
		if off {
			want = 0
		}
		require.Equal(t, want, released, "NoRelease=%v", off)
	}
}

// sink keeps allocations from being optimized away.
var sink [][]byte

// TestReleaseReturnsTheRealHeapsGarbage: with the real runtime, the
// garbage readHeap sees after dropping 96 MiB is mostly gone after a
// quiet period's release.
func TestReleaseReturnsTheRealHeapsGarbage(t *testing.T) {
	const mib = 1 << 20
	// No collection while the garbage is made; Release collects anyway.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	for range 96 {
		sink = append(sink, make([]byte, mib))
	}
	sink = nil
	before := readHeap().Garbage
	require.Greater(t, before, uint64(64*mib), "the dropped slices are garbage")
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The default Heap and Release: the runtime's own.
		Run(ctx, Config{Headroom: 32 * mib, Tick: tick, SetPercent: func(p int) int { return p }, StartGrace: -1})
	}()
	// Quiet periods until the garbage is gone (the first only primes).
	deadline := time.Now().Add(10 * time.Second)
	after := before
	for after >= before/2 && time.Now().Before(deadline) {
		tick <- time.Time{}
		after = readHeap().Garbage
	}
	cancel()
	<-done
	require.Less(t, after, before/2, "garbage before %d MiB, after %d MiB", before/mib, after/mib)
}
