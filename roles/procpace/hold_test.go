package procpace

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A Hold raises the Ps at once, without waiting for a period, and keeps
// them through light periods until it is released; then the usual second
// of light load takes the process back to one P.
func TestHoldRaisesAtOnceAndKeepsThePs(t *testing.T) {
	holds := &Holds{}
	f, next, period, stop := runFake(t, Config{Holds: holds})
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
	stop()
	require.Equal(t, 2, next(), "the value found at start is put back")
	require.Empty(t, f.sets)
	holds.Hold()() // with the pacer gone, a Hold changes nothing
	require.Empty(t, f.sets)
}
