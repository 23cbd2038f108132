package metadata

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// yieldProbe is a snapshot's writer that watches a goroutine standing
// for a request: at its first write it records whether that goroutine has
// run already, and wakes it (wake, when set); at every later one it
// counts the writes made before it ran.
type yieldProbe struct {
	wake   chan struct{}
	ran    *atomic.Bool
	writes int
	early  bool // the goroutine had run by the first write
	late   int  // later writes before the goroutine ran
}

func (p *yieldProbe) Write(b []byte) (int, error) {
	p.writes++
	switch {
	case p.writes == 1:
		p.early = p.ran.Load()
		if p.wake != nil {
			close(p.wake)
		}
	case !p.ran.Load():
		p.late++
	}
	return len(b), nil
}

// On one processor a goroutine woken while a snapshot is being written
// runs before the encoder's next buffer, not after the whole snapshot or
// the scheduler's 10 ms time slice: the encoder yields after each buffer
// it writes (snapEncoder.flush).
func TestSnapshotEncoderLetsWokenGoroutinesRun(t *testing.T) {
	a := newApplier(t)
	for i := range 4000 { // several encoder buffers
		a.apply(putCmd(fmt.Sprintf("w/%05d", i), strings.Repeat("x", 300)))
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rounds = 20
	late := 0
	for range rounds {
		var ran atomic.Bool
		p := &yieldProbe{wake: make(chan struct{}), ran: &ran}
		done := make(chan struct{})
		go func() {
			<-p.wake
			ran.Store(true)
			close(done)
		}()
		_, err := a.s.Cut().WriteTo(p)
		require.NoError(t, err)
		require.Greater(t, p.writes, 3)
		<-done
		if p.late > 0 {
			late++
		}
	}
	// Without the yield every round is late; a collection can still
	// delay the woken goroutine past a write now and then.
	require.LessOrEqual(t, late, rounds/4, "rounds in which a woken goroutine waited behind the encoder")
}

// The passes before a snapshot's first byte (the znodes' order, sorted
// for the first cut and merged for later ones, and the sections' sizes)
// yield too: on one P a goroutine made runnable just before the
// snapshot starts runs before its first write.
func TestSnapshotPassesLetOtherGoroutinesRun(t *testing.T) {
	a := newApplier(t)
	for i := range 20000 {
		require.NoError(t, zcreate(t, a, fmt.Sprintf("/n%05d", i), nil).Err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, cut := range []string{"first (sorted)", "second (merged)"} {
		var ran atomic.Bool
		done := make(chan struct{})
		go func() {
			ran.Store(true)
			close(done)
		}()
		p := &yieldProbe{ran: &ran}
		c := a.s.Cut()
		_, err := c.WriteTo(p)
		c.Release()
		require.NoError(t, err)
		<-done
		require.True(t, p.early, "%s cut: the goroutine waited for the snapshot's passes", cut)
		require.NoError(t, a.apply(zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/n00007", Data: []byte("x"), Version: -1})).Err)
	}
}
