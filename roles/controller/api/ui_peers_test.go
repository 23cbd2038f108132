package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A peer that does not answer neither holds up a tick nor gets a second
// request while the first is in flight; its latest answer goes stale.
func TestPeerAsks(t *testing.T) {
	t.Parallel()
	var a peerAsks
	release := make(chan struct{})
	calls := 0
	slow := func() uiPeer { calls++; <-release; return uiPeer{ID: 2, Up: true, Term: 7} }
	d1 := a.ask(2, slow)
	d2 := a.ask(2, slow)
	require.Equal(t, d1, d2, "a second ask while one is in flight")
	now := time.Now()
	require.Equal(t, "no answer yet", a.latest(uiPeer{ID: 2, Address: "x"}, now).Error)
	close(release)
	<-d1
	require.Equal(t, 1, calls)
	got := a.latest(uiPeer{ID: 2, Address: "new", Voter: true}, time.Now())
	require.True(t, got.Up)
	require.Equal(t, uint64(7), got.Term)
	require.Equal(t, "new", got.Address, "membership fields come from the caller")
	require.True(t, got.Voter)
	stale := a.latest(uiPeer{ID: 2}, time.Now().Add(uiPeerStale+time.Second))
	require.False(t, stale.Up)
	require.Contains(t, stale.Error, "no answer for")
}
