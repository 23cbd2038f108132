package procpace

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Hold raises the Ps at once, without waiting for a period, and keeps
// them through light periods until it is released; then the usual second
// of light load takes the process back to one P.
func TestHoldRaisesAtOnceAndKeepsThePs(t *testing.T) {
	f := &fakeProcess{now: time.Unix(1000, 0), sets: make(chan int, 16), reads: make(chan struct{}), gmp: 2}
	tick := make(chan time.Time)
	holds := &Holds{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Config{Max: 2, Read: f.read, Now: f.clock, Set: f.set, Tick: tick, Holds: holds})
	}()
	next := func() int {
		select {
		case n := <-f.sets:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no GOMAXPROCS set within 10s")
			return 0
		}
	}
	period := func(l load) {
		f.period(l)
		tick <- time.Time{}
		<-f.reads
	}
	require.Equal(t, 2, next(), "starts on all Ps")
	<-f.reads
	for range DefaultDownPeriods {
		period(light)
	}
	require.Equal(t, 1, next(), "a second of light load")

	release := holds.Hold()
	require.Equal(t, 2, next(), "raised by the Hold itself")
	for range 3 * DefaultDownPeriods {
		period(idle)
	}
	require.Empty(t, f.sets, "held through idle periods")
	release()
	release() // idempotent: one Hold, one release
	for range DefaultDownPeriods {
		period(light)
	}
	require.Equal(t, 1, next(), "released: a second of light load")
	cancel()
	<-done
	require.Equal(t, 2, next(), "the value found at start is put back")
	require.Empty(t, f.sets)
	holds.Hold()() // with the pacer gone, a Hold changes nothing
	require.Empty(t, f.sets)
}
