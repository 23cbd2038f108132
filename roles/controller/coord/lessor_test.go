package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is the lessor's clock under test control.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestLessor_NewPrimaryGivesFullTTL(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLessor()
	l.now = clk.now
	ttls := map[int64]int64{1: 1500, 2: 3000}

	// Not primary: nothing expires, keep-alives are refused.
	require.Empty(t, l.Sync(ttls))
	require.ErrorIs(t, l.Refresh(1, 1500*time.Millisecond, clk.now()), ErrNotPrimary)

	l.SetPrimary(true)
	require.Empty(t, l.Sync(ttls))
	clk.advance(1400 * time.Millisecond)
	require.NoError(t, l.Refresh(1, 1500*time.Millisecond, clk.now())) // now 1.4 s + 1.5 s
	clk.advance(200 * time.Millisecond)
	require.Empty(t, l.Sync(ttls), "a refreshed lease must not expire at its first deadline")

	// Leadership moves away and back: every deadline starts over, a full
	// TTL from the moment this lessor sees the leases again.
	l.SetPrimary(false)
	l.SetPrimary(true)
	require.Empty(t, l.Sync(ttls))
	clk.advance(1499 * time.Millisecond)
	require.Empty(t, l.Sync(ttls))
	clk.advance(time.Millisecond)
	require.Equal(t, []int64{1}, l.Sync(ttls))
	require.ErrorIs(t, l.Refresh(1, 1500*time.Millisecond, clk.now()), ErrLeaseExpiring,
		"a keep-alive after the deadline must not be acknowledged")

	// A refresh never shortens a deadline.
	require.NoError(t, l.Refresh(2, time.Millisecond, clk.now()))
	clk.advance(1499 * time.Millisecond)
	require.NotContains(t, l.Sync(ttls), int64(2))
	clk.advance(time.Millisecond)
	require.Contains(t, l.Sync(ttls), int64(2))

	// A revoked lease is forgotten.
	delete(ttls, 1)
	l.Sync(ttls)
	l.mu.Lock()
	_, ok := l.deadline[1]
	l.mu.Unlock()
	require.False(t, ok)
}
