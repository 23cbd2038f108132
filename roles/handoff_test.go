package roles

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/internal/testcluster"
)

// A controller that wins an election moments after it restarted holds no
// worker's standby connection, so every worker would need a handshake
// with it at once. With workers registered it hands the leadership on to
// a controller that was running (roles/controller/handoff.go). Here the
// restarted controller is made leader by a transfer, as a fast election
// after kill -9 would; it must not stay leader, and the worker keeps its
// session through both changes.
func TestController_RestartedLeaderHandsLeadershipToARunningController(t *testing.T) {
	const session = 5 * time.Second // a hand-off window (2 session timeouts) wide enough for -race
	wc := testcluster.New(t, 3, func(cfg *controller.Config) { cfg.SessionTimeout = session })
	w := wc.StartWorker("", nil)
	wc.WaitAlive(w)
	epoch := w.Status().Epoch

	old := wc.Leader().NodeID()
	wc.StopController(old)
	wc.WaitLeader(wc.Others(old)...)
	wc.StartController(old)

	handOffs := func() float64 {
		return testcluster.Metric(t, wc.Node(old).Registry(), "corral_controller_leadership_handoffs_total")
	}
	// Raft abandons a transfer to a controller that does not catch up
	// within an election timeout (140 ms here), which a controller still
	// replaying its log under -race may miss: ask again until it led. The
	// wait inside TransferLeader may miss the moment it led (it hands over
	// at once), so its outcome is not checked: the counter says it led.
	// A hand-off moves the leadership (a new term) a moment before it
	// counts, so a new request waits for the term to be still for a second:
	// one sent in that moment brought the leadership back, the hand-off
	// gave up, and the restarted controller stayed leader (1 run in 10).
	var term uint64
	var still time.Time
	require.Eventually(t, func() bool {
		if handOffs() > 0 {
			return true
		}
		now := time.Now()
		if tm := wc.Node(old).Term(); tm != term {
			term, still = tm, now
		}
		if l := wc.Node(old).LeaderID(); l != 0 && l != old && now.Sub(still) >= time.Second {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = wc.Node(l).TransferLeader(ctx, old)
			cancel()
			still = time.Now() // this request gets its second too
		}
		return handOffs() > 0
	}, 20*time.Second, 10*time.Millisecond, "the restarted controller did not hand the leadership on")
	require.Equal(t, float64(1), handOffs(), "once per process")
	require.Eventually(t, func() bool {
		l := wc.Node(old).LeaderID()
		return l != 0 && l != old && wc.Node(l).LeaderID() == l
	}, 10*time.Second, 5*time.Millisecond, "the restarted controller kept the leadership")
	require.Eventually(t, func() bool { return w.Status().Alive && w.Status().Leader == wc.Addr(wc.Node(old).LeaderID()) },
		10*time.Second, 5*time.Millisecond, "the worker did not follow the leader")
	require.Equal(t, epoch, w.Status().Epoch, "the worker's session must survive the hand-off")
	require.Empty(t, w.FencedTimes())
}
