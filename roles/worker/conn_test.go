package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// recordingDialer fails every dial and remembers the addresses dialed.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recordingDialer) DialStream(_ context.Context, addr string) (transport.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, addr)
	return nil, errors.New("refused")
}

func (d *recordingDialer) Close() error { return nil }

// When the standbys name a leader the worker holds no standby to (a
// controller that just restarted, say), the worker dials that leader
// alone: the others already answer on their standbys, and dialing them
// too made every worker of a failover herd dial every controller.
func TestWorker_DialsANamedLeaderAloneWhenItHoldsStandbysToTheRest(t *testing.T) {
	d := &recordingDialer{}
	w := &Worker{cfg: Config{HeartbeatInterval: time.Second, DialTimeout: time.Second, Controllers: []string{"a", "b", "c"}},
		dialer: d, life: context.Background(), dialc: make(chan dialResult, 1), preferred: "a",
		standby: map[string]*wconn{"b": {addr: "b", s: nopStream{}}, "c": {addr: "c", s: nopStream{}}},
		met:     newWorkerAgentMetrics(nil), log: slog.New(slog.DiscardHandler), kickT: time.NewTimer(time.Hour)}
	defer w.kickT.Stop()
	w.connect()
	r := <-w.dialc // every target failed
	require.Error(t, r.err)
	require.Equal(t, []string{"a"}, d.addrs)
	require.Len(t, w.standby, 2, "the standbys stay")

	// Without standbys every controller is a fallback, the leader first.
	d2 := &recordingDialer{}
	w.dialer, w.dialing, w.standby = d2, false, map[string]*wconn{}
	w.connect()
	<-w.dialc
	require.Equal(t, []string{"a", "b", "c"}, d2.addrs)
}

// A dial of the named leader alone is not abandoned before the self-fence
// deadline; any other dial keeps the configured timeout.
func TestWorker_DialTimes(t *testing.T) {
	now := time.Now()
	w := &Worker{cfg: Config{DialTimeout: 2 * time.Second}, timeout: 10 * time.Second, alive: true,
		lastAcked: now.Add(-time.Second)}
	timeout, hedge := w.dialTimes(true, now)
	require.Equal(t, 5*time.Second, timeout, "0.6 x 10 s after the last acknowledgement, 1 s ago")
	require.Equal(t, 500*time.Millisecond, hedge)
	timeout, _ = w.dialTimes(false, now)
	require.Equal(t, 2*time.Second, timeout)
	w.lastAcked = now.Add(-10 * time.Second)
	timeout, _ = w.dialTimes(true, now)
	require.Equal(t, 2*time.Second, timeout, "past the deadline: the configured timeout")
}
