package coord

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

func TestCoord_WatchHubOverflowAndCompaction(t *testing.T) {
	h := NewHub(4, 2)
	h.Reset(10)
	ev := func(rev int64) metadata.Event {
		return metadata.Event{Type: metadata.EventPut, Key: "k", ModRevision: rev}
	}
	_, _, _, err := h.Subscribe("", 10)
	require.ErrorContains(t, err, "oldest revision available is 11")
	slow, _, _, err := h.Subscribe("", 0)
	require.NoError(t, err)
	other, _, _, err := h.Subscribe("zzz", 0)
	require.NoError(t, err)
	h.Publish([]metadata.Event{ev(11), ev(12), ev(13)}) // never blocks
	select {
	case <-slow.Cut():
		we := slow.Err().(*WatchError)
		require.Equal(t, "watch_overflow", we.Code)
		require.Equal(t, int64(13), we.Resume)
	default:
		t.Fatal("slow watcher was not cut")
	}
	require.Len(t, slow.Take(nil), 2)
	select {
	case <-other.Cut():
		t.Fatal("a watcher of other keys was cut")
	default:
	}
	// Resume from 13 replays from the window.
	w, backlog, _, err := h.Subscribe("", 13)
	require.NoError(t, err)
	require.Equal(t, []metadata.Event{ev(13)}, backlog)
	h.Unsubscribe(w)
	h.Publish([]metadata.Event{ev(14), ev(15)}) // window of 4: 12..15
	_, _, _, err = h.Subscribe("", 11)
	require.ErrorContains(t, err, "oldest revision available is 12")
	_, backlog, _, err = h.Subscribe("", 12)
	require.NoError(t, err)
	require.Len(t, backlog, 4)
}
