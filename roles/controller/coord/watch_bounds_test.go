package coord

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// An idle watcher reserves no buffer: 1,000 of them cost well under a
// megabyte (a 4,096-slot channel each was about 500 MB).
func TestCoord_WatchersReserveNoBuffer(t *testing.T) {
	h := NewHub(16, DefaultWatchBuffer)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ws := make([]*Watcher, 1000)
	for i := range ws {
		w, _, _, err := h.Subscribe("k", 0)
		require.NoError(t, err)
		ws[i] = w
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / uint64(len(ws))
	t.Logf("%d bytes allocated per idle watcher", per)
	require.Less(t, per, uint64(2048))
	runtime.KeepAlive(ws)
}

// The queue grows with the backlog, is cut at the same bound as before
// (DefaultWatchBuffer events), and is released once drained.
func TestCoord_WatchQueueGrowsOnDemand(t *testing.T) {
	const buf = 100
	h := NewHub(1000, buf)
	w, _, _, err := h.Subscribe("", 0)
	require.NoError(t, err)
	rev := int64(0)
	publish := func(n int) {
		for range n {
			rev++
			h.Publish([]metadata.Event{{Type: metadata.EventPut, Key: "k", ModRevision: rev}})
		}
	}
	publish(buf) // exactly the bound: not cut
	select {
	case <-w.Ready():
	default:
		t.Fatal("Ready not signalled")
	}
	require.Equal(t, buf, w.Pending())
	got := w.Take(nil)
	require.Len(t, got, buf)
	require.Equal(t, int64(1), got[0].ModRevision)
	require.Equal(t, int64(buf), got[buf-1].ModRevision)
	require.Zero(t, w.Pending())
	w.mu.Lock()
	require.LessOrEqual(t, cap(w.queue), keepQueue, "a burst's buffer was kept")
	w.mu.Unlock()
	select {
	case <-w.Cut():
		t.Fatal("cut at the bound")
	default:
	}
	publish(buf + 1) // one past: cut with the revision to resume from
	<-w.Cut()
	var we *WatchError
	require.True(t, errors.As(w.Err(), &we))
	require.Equal(t, "watch_overflow", we.Code)
	require.Equal(t, rev, we.Resume)
	require.Len(t, w.Take(nil), buf) // what was queued is still delivered
}

func TestCoord_MaxWatchers(t *testing.T) {
	h := NewHub(16, 16)
	h.SetMaxWatchers(2)
	a, _, _, err := h.Subscribe("", 0)
	require.NoError(t, err)
	_, _, _, err = h.Subscribe("", 0)
	require.NoError(t, err)
	_, _, _, err = h.Subscribe("", 0)
	require.ErrorIs(t, err, ErrTooManyWatches)
	require.ErrorContains(t, err, "--max-watches")
	h.Unsubscribe(a)
	_, _, _, err = h.Subscribe("", 0)
	require.NoError(t, err)
}
