package roles

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
)

// A controller stopped on purpose snapshots first when at least
// SnapshotEvery entries lie beyond its last snapshot (the adaptive
// interval lets a large state go ten times that between snapshots), so
// that its next start replays nothing; with fewer, it stops at once.
func TestController_StopSnapshotsALongLogOnly(t *testing.T) {
	const every = 20
	wc := testcluster.New(t, 3, func(c *controller.Config) { c.SnapshotEvery = every })
	lead := wc.Leader().NodeID()
	snaps := func(id uint64) float64 {
		return testcluster.Metric(t, wc.Node(id).Registry(), "corral_raft_snapshots_total")
	}
	put := func(n int, prefix string) {
		for i := range n {
			_, err := wc.Put(lead, fmt.Sprintf("%s%d", prefix, i), "v")
			require.NoError(t, err)
		}
	}
	// A state of 256 KB: past every entries, the next snapshot then waits
	// for 128 KB of log, or ten times every entries (snapshotDue).
	_, err := wc.Put(lead, "big", strings.Repeat("x", 256<<10))
	require.NoError(t, err)
	put(2*every, "a")
	waitSameApplied(t, wc)
	id := wc.Others(lead)[0]
	require.Eventually(t, func() bool { return snaps(id) >= 1 }, 10*time.Second, 5*time.Millisecond, "no first snapshot")

	// More than every entries beyond it, and not due by themselves (3 ×
	// every entries of a few bytes): the stop takes one, at what it
	// applied.
	put(3*every, "b")
	waitSameApplied(t, wc)
	before := snaps(id)
	applied := wc.Node(id).State().AppliedIndex()
	reg := wc.Node(id).Registry()
	wc.StopController(id)
	require.Equal(t, before+1, testcluster.Metric(t, reg, "corral_raft_snapshots_total"), "no snapshot at the stop")
	wc.StartController(id)
	// Restored from that snapshot: applied from the start, nothing to
	// replay up to it.
	require.GreaterOrEqual(t, wc.Node(id).State().AppliedIndex(), applied)

	// Stopped again at once: fewer than every entries beyond the
	// snapshot, so the stop takes none.
	reg = wc.Node(id).Registry()
	before = testcluster.Metric(t, reg, "corral_raft_snapshots_total")
	wc.StopController(id)
	require.Equal(t, before, testcluster.Metric(t, reg, "corral_raft_snapshots_total"), "a snapshot at a stop with a short log")
	wc.StartController(id)
}

// A stop that finds a snapshot being written waits for it, then takes one
// of its own only if the same rule still asks for one: when SnapshotEvery
// more entries were applied while the first was written, and not
// otherwise.
func TestController_StopDuringASnapshotWaitsAndTakesAnotherOnlyIfWorthIt(t *testing.T) {
	for _, more := range []bool{false, true} {
		t.Run(fmt.Sprintf("more_entries=%v", more), func(t *testing.T) {
			const every = 20
			var armed atomic.Uint64 // the controller whose next snapshot blocks
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			t.Cleanup(func() { once.Do(func() { close(release) }) })
			logs := &msgLog{}
			wc := testcluster.New(t, 3, func(c *controller.Config) {
				c.SnapshotEvery = every
				id := c.NodeID
				c.SnapshotHook = func() {
					if armed.CompareAndSwap(id, 0) {
						close(entered)
						<-release
					}
				}
				c.Logger = slog.New(logs.handler(id))
			})
			lead := wc.Leader().NodeID()
			id := wc.Others(lead)[0]
			armed.Store(id)
			for i, started := 0, false; !started; i++ {
				select {
				case <-entered:
					started = true
					continue
				default:
				}
				require.Less(t, i, 20*every, "no snapshot started")
				_, err := wc.Put(lead, fmt.Sprintf("a%d", i), strings.Repeat("v", 512))
				require.NoError(t, err)
			}
			if more {
				for i := range 2 * every {
					_, err := wc.Put(lead, fmt.Sprintf("b%d", i), "v")
					require.NoError(t, err)
				}
				waitSameApplied(t, wc)
			}
			reg := wc.Node(id).Registry()
			before := testcluster.Metric(t, reg, "corral_raft_snapshots_total")
			stopped := make(chan struct{})
			go func() { wc.StopController(id); close(stopped) }()
			require.Eventually(t, func() bool { return logs.has(id, "stop waits for the snapshot being written") },
				10*time.Second, 5*time.Millisecond, "the stop did not find the snapshot under way")
			once.Do(func() { close(release) })
			select {
			case <-stopped:
			case <-time.After(30 * time.Second):
				t.Fatal("the stop did not finish")
			}
			want := before + 1 // the one that was being written
			if more {
				want++ // and the stop's own
			}
			require.Equal(t, want, testcluster.Metric(t, reg, "corral_raft_snapshots_total"))
			wc.StartController(id)
		})
	}
}

// msgLog records the messages each controller logs.
type msgLog struct {
	mu   sync.Mutex
	msgs map[uint64][]string
}

func (l *msgLog) handler(id uint64) slog.Handler { return msgHandler{l: l, id: id} }

func (l *msgLog) has(id uint64, msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.msgs[id], msg)
}

type msgHandler struct {
	l  *msgLog
	id uint64
}

func (h msgHandler) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelInfo }
func (h msgHandler) Handle(_ context.Context, r slog.Record) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.l.msgs == nil {
		h.l.msgs = map[uint64][]string{}
	}
	h.l.msgs[h.id] = append(h.l.msgs[h.id], r.Message)
	return nil
}
func (h msgHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h msgHandler) WithGroup(string) slog.Handler      { return h }
