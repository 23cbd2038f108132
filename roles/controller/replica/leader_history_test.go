package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLeaderHistory_KeepsTheLastHourOfChanges(t *testing.T) {
	var h leaderHistory
	t0 := time.Unix(1000, 0)
	h.observe(t0, 1, 2)
	h.observe(t0.Add(time.Second), 1, 2)   // same leader: no change
	h.observe(t0.Add(2*time.Second), 0, 3) // leaderless: not a change
	h.observe(t0.Add(3*time.Second), 2, 3)
	got := h.lastHour(t0.Add(4 * time.Second))
	require.Equal(t, []LeaderChange{{AtMS: t0.UnixMilli(), From: 0, To: 1, Term: 2},
		{AtMS: t0.Add(3 * time.Second).UnixMilli(), From: 1, To: 2, Term: 3}}, got)
	require.Len(t, h.lastHour(t0.Add(time.Hour+2*time.Second)), 1, "older than an hour is dropped")
}
