package worker

import (
	"slices"
	"time"
)

// A probe asks a controller who leads while the leader is silent. A
// controller answers that from memory, so a probe that stays silent too is
// not waited for longer than the leader was (silentAfter). Its connection
// is most likely one that crossed a partition: QUIC retransmits on a
// timer that doubles while nothing is acknowledged, so after a partition
// of a few seconds the first packet after the heal may leave seconds
// later. Or its controller is down as well. Waiting on such a connection
// can spend the whole self-fence margin: a worker keeps, as a standby, its
// connection to a leader partitioned in one round (when the new leader's
// beckon moved the session before the old one looked silent), and asks on
// it when that controller leads in the next round. That fits a
// self-fencing the fifteen-failover test met in CI (the worker's log was
// cut off; a later one was the test's cadence, since mended), and with
// QUIC's backoff modelled in memory
// (transport.MemNetwork.SetStreamBackoff) the production-ratios failover
// test fences a worker that way without these rules. A new handshake
// costs milliseconds.

// A probe on a connection just dialed for it is waited for as long as the
// handshake was (the dial timeout): that connection has lost nothing, and
// a controller slow to answer it is busy, most likely with every other
// worker's handshake; closing it and dialing again would add to that.

// noteProbeAsked records that the probe was just asked who leads, and
// wakes the worker when the answer is due.
func (w *Worker) noteProbeAsked(now time.Time) {
	w.probeAsked = now
	w.kick(w.probeWait)
}

// maybeAbandonProbe gives up on a probe that has not answered within
// probeWait of being asked: it closes that connection and asks again,
// on another standby, or by dialing the probe's targets (the silent one
// last, on a new connection).
func (w *Worker) maybeAbandonProbe(now time.Time) {
	p := w.probe
	if p == nil || w.probeAsked.IsZero() || now.Sub(w.probeAsked) < w.probeWait || !p.lastRecv.Before(w.probeAsked) {
		return
	}
	targets := slices.DeleteFunc(slices.Clone(w.probeTargets), func(a string) bool { return a == p.addr })
	targets = append(targets, p.addr)
	w.log.Info("the controller asked who leads is silent too; asking again on another connection",
		"controller", p.addr, "waited", now.Sub(w.probeAsked).Round(time.Millisecond))
	w.met.probesAbandoned.Inc()
	w.closeProbe()
	if w.conn != nil && w.leaderSilent(now) {
		w.startProbe(targets, now)
	}
}

// reconnectToLeader handles a probe's answer that the leader is the
// controller the session's connection already reaches, in a term that has
// not acknowledged this worker: that controller works, the connection to
// it does not (a standby that crossed a partition, taken as the session's
// connection when a redirect named it). Asking again would hear the same
// answer until the self-fence; a new connection to it is a handshake.
func (w *Worker) reconnectToLeader(now time.Time) {
	w.log.Info("the leader is silent on this connection but leads by another controller's account; connecting to it again",
		"controller", w.conn.addr)
	w.parkProbe()
	w.startProbe([]string{w.conn.addr}, now)
}

// takeProbeStandby takes the standby to ask who leads: among targets, in
// order, the first whose last keep-alive was answered (or is still young),
// else the first at all. A standby whose ping went unanswered may be one
// that crossed a partition (above).
func (w *Worker) takeProbeStandby(targets []string, now time.Time) *wconn {
	for _, a := range targets {
		if c := w.standby[a]; c != nil && !w.standbyUnanswered(c, now) {
			return w.takeStandby(a)
		}
	}
	for _, a := range targets {
		if c := w.takeStandby(a); c != nil {
			return c
		}
	}
	return nil
}

// standbyUnanswered reports whether c's last keep-alive has gone
// unanswered for longer than a leader's heartbeat may.
func (w *Worker) standbyUnanswered(c *wconn, now time.Time) bool {
	return !c.lastSent.IsZero() && c.lastRecv.Before(c.lastSent) && now.Sub(c.lastSent) >= w.silentAfter()
}
