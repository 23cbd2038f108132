package replica

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tickWatch measures how late the raft loop takes each tick of its
// clock. A loop that falls behind stops the leader's heartbeats and
// CheckQuorum's count with it: stalled for an election timeout, its
// followers elect another leader, though nothing failed. Once, right
// after a burst of 128 writing clients, a leader went silent for over a
// second and was replaced that way; nothing recorded where the second
// went. The histogram shows such stalls, and the warning names them when
// they reach half an election timeout (etcd warns the same way when a
// leader's heartbeat leaves late).
type tickWatch struct {
	delay prometheus.Histogram
	log   *slog.Logger
	// warnAt is the delay worth a warning; quiet is the least time
	// between two warnings, lastWarn when the last one was, and missed
	// how many were held back since.
	warnAt, quiet time.Duration
	lastWarn      time.Time
	missed        int
}

// tickWarnQuiet is the least time between two warnings of a late tick:
// a loop that is late on every tick says so once, not on every tick.
const tickWarnQuiet = 10 * time.Second

func newTickWatch(delay prometheus.Histogram, log *slog.Logger, tick time.Duration, electionTicks int) *tickWatch {
	return &tickWatch{delay: delay, log: log, warnAt: tick * time.Duration(electionTicks) / 2, quiet: tickWarnQuiet}
}

// observe records a tick due at due (the time its ticker fired) and taken
// at now. A ticker keeps one tick while its reader is away and drops the
// rest, so after a stall the one kept is as late as the stall, less at
// most one tick.
func (w *tickWatch) observe(due, now time.Time) {
	late := now.Sub(due)
	if late < 0 {
		late = 0
	}
	w.delay.Observe(late.Seconds())
	if late < w.warnAt {
		return
	}
	if !w.lastWarn.IsZero() && now.Sub(w.lastWarn) < w.quiet {
		w.missed++
		return
	}
	w.log.Warn("raft loop took a tick late: heartbeats stopped meanwhile, and followers elect another leader after an election timeout of this; look for CPU starvation, swapping or a stalled disk",
		"late", late.Round(time.Millisecond), "election_timeout_min", 2*w.warnAt, "late_ticks_not_logged", w.missed)
	w.lastWarn, w.missed = now, 0
}
