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
