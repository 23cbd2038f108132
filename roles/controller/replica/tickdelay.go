package replica

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A leader whose raft loop, or raft's own goroutine behind it, stalls
// sends no heartbeats: at an election timeout its followers elect another
// leader, though nothing failed. Once, right after a burst of 128 writing
// clients, a leader went silent for over a second and was replaced that
// way, with nothing to say where its second went. Two measures tell now:
// how late the raft loop takes each tick of its clock (the loop itself),
// and on a leader the time between its rounds of heartbeats (the loop and
// raft's goroutine, which turns ticks into heartbeats). Either reaching
// half an election timeout is also logged, as etcd warns of a heartbeat
// sent late.

// stallWarnQuiet is the least time between two warnings of one kind: a
// loop that is late on every tick says so once, not on every tick.
const stallWarnQuiet = 10 * time.Second

// stallWatch records one measure of lateness and warns of the large ones.
type stallWatch struct {
	hist prometheus.Histogram
	log  *slog.Logger
	msg  string
	// warnAt is the lateness worth a warning (half an election timeout);
	// lastWarn is when the last one was, missed how many were held back
	// since.
	warnAt   time.Duration
	lastWarn time.Time
	missed   int
}

func newStallWatch(hist prometheus.Histogram, log *slog.Logger, msg string, tick time.Duration, electionTicks int) *stallWatch {
	return &stallWatch{hist: hist, log: log, msg: msg, warnAt: tick * time.Duration(electionTicks) / 2}
}

// observe records late, measured at now.
func (w *stallWatch) observe(late time.Duration, now time.Time) {
	late = max(late, 0)
	w.hist.Observe(late.Seconds())
	if late < w.warnAt {
		return
	}
	if !w.lastWarn.IsZero() && now.Sub(w.lastWarn) < stallWarnQuiet {
		w.missed++
		return
	}
	w.log.Warn(w.msg, "late", late.Round(time.Millisecond), "election_timeout_min", 2*w.warnAt, "not_logged_since_last", w.missed)
	w.lastWarn, w.missed = now, 0
}

// tickTaken records a tick due at due (when its ticker fired) and taken at
// now. A ticker keeps one tick while its reader is away and drops the
// rest, so after a stall the one kept is as late as the stall, less at
// most one tick.
func (w *stallWatch) tickTaken(due, now time.Time) { w.observe(now.Sub(due), now) }

// beatWatch measures a leader's time between rounds of heartbeats.
type beatWatch struct {
	*stallWatch
	last time.Time // the last round's time; zero when not leading
}

// sent records a round of heartbeats leaving at now.
func (b *beatWatch) sent(now time.Time) {
	if !b.last.IsZero() {
		b.observe(now.Sub(b.last), now)
	}
	b.last = now
}

// stop forgets the last round: this member no longer leads, and its next
// term's first round has nothing to follow.
func (b *beatWatch) stop() { b.last = time.Time{} }

const (
	msgTickLate = "raft loop took a tick of its clock late: a leader sends no heartbeats meanwhile, and its followers elect another after an election timeout; look for CPU starvation, swapping or a stalled disk"
	msgBeatLate = "leader sent its heartbeats late: its followers elect another leader after an election timeout without them; look for CPU starvation, swapping or a stalled disk"
)
