package worker

import (
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/corral-dev/corral/transport"
)

// Standby connections. Besides its session's connection to the leader, a
// live worker keeps one idle connection to every other controller. When the
// leader dies, the worker asks a standby who leads instead of dialing, and
// resumes on the new leader's standby: a failover costs no handshake. At
// scale that is the difference between a failover and a collapse: every
// worker needs the new leader within the same second, and thousands of
// mutual-TLS handshakes at once took longer than the self-fence margin on
// a 2-core machine (docs/ARCHITECTURE.md, "What a failover costs a
// worker"). The price is one more connection per worker at every follower
// and a small keep-alive message on each every half session timeout.
//
// A standby is dialed lazily and spread out in time, one at a time, so
// that the standbys to a controller that restarts do not come back as a
// herd either.

// standbyPingEvery is how often a standby carries a message: the
// controller closes a worker stream silent for two session timeouts, and
// QUIC a connection silent for its idle timeout (NewDialer).
func (w *Worker) standbyPingEvery() time.Duration {
	t := w.timeout
	if t <= 0 {
		t = transport.DefaultSessionTimeout
	}
	return min(t/2, transport.MaxIdleTimeout/3)
}

// NewDialer returns the QUIC dialer of a worker heartbeating every
// heartbeat (also the one `corral bench workers` gives its simulated
// workers). A worker talks on every connection it keeps: it heartbeats on
// its session and pings each standby (standbyPingEvery), so the dialer
// asks for the longest idle timeout a controller grants and sends no QUIC
// keep-alive pings of its own. With them, two idle standbys per worker
// cost the followers as much CPU as the heartbeats cost the leader
// (docs/PERFORMANCE.md, "Idle connections without keep-alive pings"). A
// heartbeat too slow for that timeout keeps QUIC's defaults.
func NewDialer(bundle *transport.TLSBundle, log *slog.Logger, heartbeat time.Duration) (*transport.QUICDialer, error) {
	cfg := transport.QUICDialerConfig{TLS: bundle, ALPN: transport.ALPNWorker, Logger: log, RequestInterval: heartbeat}
	if 3*heartbeat <= transport.MaxIdleTimeout {
		cfg.IdleTimeout = transport.MaxIdleTimeout
	}
	return transport.NewQUICDialer(cfg)
}

// standbyRedialAfter is the wait before (re)dialing a missing standby:
// random over [T/2, 2T] (T the session timeout), so that the workers whose
// standbys to a restarted controller died together dial it again spread
// over 15 s at the defaults, not in the second it comes back. It is not
// longer because until its standbys are back that controller is a poor
// next leader: every worker without one must handshake with it within
// the self-fence margin, all at once. With [T, 4T], a leader killed 30 s
// after a restarted controller came back handed over to it with a third
// of the workers still to dial it, and 413 of 2,000 fenced themselves
// (docs/PERFORMANCE.md, "Workers across leader kills"). A worker's first
// standbys come after a random [0, T], for a cluster that starts all its
// workers at once.
func (w *Worker) standbyRedialAfter(first bool) time.Duration {
	t := w.standbyPingEvery() * 2
	if first {
		return rand.N(t + 1)
	}
	return t/2 + rand.N(3*t/2+1)
}

// maintainStandbys runs at every tick of a live worker: it keeps each
// standby talking and dials a missing one when its time has come.
func (w *Worker) maintainStandbys(now time.Time) {
	for _, c := range w.standby {
		if now.Sub(c.lastSent) >= w.standbyPingEvery() {
			w.pingStandby(c, now)
		}
	}
	if w.dialing || w.standbyDialing || w.probe != nil || w.conn == nil {
		return
	}
	if w.standbyAt.IsZero() {
		w.standbyAt = now.Add(w.standbyRedialAfter(true))
		return
	}
	if now.Before(w.standbyAt) {
		return
	}
	for _, a := range w.cfg.Controllers {
		if a != w.conn.addr && w.standby[a] == nil {
			w.standbyDialing = true
			go w.dialStandby(a)
			return
		}
	}
}

// dialStandby dials one controller, not hedged, and hands the result to
// the worker's loop.
func (w *Worker) dialStandby(addr string) {
	w.dial([]string{addr}, w.cfg.DialTimeout, w.cfg.DialTimeout, true)
}

// onStandbyDial takes a dialed standby, or schedules the next attempt.
func (w *Worker) onStandbyDial(r dialResult) {
	w.standbyDialing = false
	now := time.Now()
	if r.err != nil {
		w.log.Debug("standby connection failed", "controller", r.addr, "err", r.err)
		w.standbyAt = now.Add(w.standbyRedialAfter(false))
		return
	}
	w.connSeq++
	c := &wconn{id: w.connSeq, s: r.s, addr: r.addr, fresh: true}
	w.met.reconnects.Inc()
	go w.read(c)
	if !w.alive || w.conn == nil {
		_ = c.s.Close()
		return
	}
	if !w.keepStandby(c) {
		return
	}
	w.pingStandby(c, now) // opens the stream at the controller
	// The next missing one, if any, soon but not at once.
	w.standbyAt = now.Add(w.standbyRedialAfter(true))
}

// pingStandby sends a heartbeat that nothing waits for: a follower answers
// it with a redirect, which keeps the stream open. It is not pending, so
// it never makes the leader look silent.
func (w *Worker) pingStandby(c *wconn, now time.Time) {
	w.seq++
	c.lastSent, c.pingSeq = now, w.seq
	w.write(c, &transport.Heartbeat{
		Seq: w.seq, WorkerID: w.id, Incarnation: w.incarnation, Epoch: w.epoch,
		HeartbeatIntervalMS: uint64(w.cfg.HeartbeatInterval.Milliseconds()), SeenControllerEpoch: w.highestCtrl,
		AssignVersion: w.jobs.assignVer,
	})
}

// keepStandby parks a healthy connection as the standby to its controller;
// it closes it instead when that controller is the session's or already
// has one. It reports whether c was kept.
func (w *Worker) keepStandby(c *wconn) bool {
	if c == nil {
		return false
	}
	if (w.conn != nil && c.addr == w.conn.addr) || w.standby[c.addr] != nil || w.stop.Err() != nil {
		_ = c.s.Close()
		return false
	}
	w.standby[c.addr] = c
	w.standbysChanged()
	return true
}

// standbysChanged updates the gauge and what Status reports.
func (w *Worker) standbysChanged() {
	w.met.standbys.Set(float64(len(w.standby)))
	addrs := make([]string, 0, len(w.standby))
	for a := range w.standby {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	w.pubStandbys.Store(&addrs)
}

// takeStandby removes and returns the standby to addr, if any.
func (w *Worker) takeStandby(addr string) *wconn {
	c := w.standby[addr]
	if c != nil {
		delete(w.standby, addr)
		w.standbysChanged()
	}
	return c
}

// dropStandby closes a standby that failed; it is dialed again later.
func (w *Worker) dropStandby(c *wconn) {
	if w.standby[c.addr] == c {
		delete(w.standby, c.addr)
		w.standbysChanged()
	}
	_ = c.s.Close()
	w.redialStandbyLater(time.Now())
}

// redialStandbyLater schedules the dial of a standby just lost (or of the
// old leader's connection, closed at a failover) for a random [T/2, 2T]
// from now, unless one is due later anyway: the workers that lost theirs
// together do not all dial that controller again at once.
func (w *Worker) redialStandbyLater(now time.Time) {
	if w.standbyAt.Before(now) || w.standbyAt.IsZero() {
		w.standbyAt = now.Add(w.standbyRedialAfter(false))
	}
}

// closeStandbys closes them all (the worker stops).
func (w *Worker) closeStandbys() {
	for _, c := range w.standby {
		_ = c.s.Close()
	}
	clear(w.standby)
	w.standbysChanged()
}

// onStandbyMessage handles what a standby brings back. A redirect is the
// normal answer. An acknowledgement means this controller now leads and
// has taken the session: it becomes the session's connection.
func (w *Worker) onStandbyMessage(c *wconn, m transport.ControllerMessage) {
	if r, ok := m.(*transport.Redirect); ok && r.Seq == 0 {
		w.onBeckon(c, r)
		return
	}
	ack, ok := m.(*transport.HeartbeatAck)
	if !ok || !w.alive || w.conn == nil || ack.Epoch != w.epoch || ack.Seq != c.pingSeq {
		return
	}
	w.takeStandby(c.addr)
	old := w.conn
	now := time.Now()
	oldest, unanswered := w.oldestPending()
	silent := w.leaderSilent(now)
	w.log.Info("a standby controller leads now; switching to it", "from", old.addr, "to", c.addr)
	clear(w.pending)
	w.conn = c
	// A probe still asking another controller who leads (taken from the
	// standbys when the old leader fell silent) reached a working
	// controller: it goes back to being a standby. Closed, it cost a new
	// handshake with a healthy controller after every failover that a
	// beckon or a standby's ack ended before the probe's answer.
	w.parkProbe()
	// The old leader's connection stays as a standby when that leader
	// answered to the end (a hand-off). One it went silent on is closed:
	// it may have crossed a partition, and QUIC would send on it again
	// only when its backed-off retransmission timer fires (probe.go); a
	// new standby is dialed instead. A heartbeat still unanswered on a
	// kept one counts as its unanswered keep-alive.
	if silent {
		_ = old.s.Close()
		w.redialStandbyLater(now)
	} else {
		if unanswered {
			old.lastSent = oldest
		}
		w.keepStandby(old)
	}
	w.pending[ack.Seq] = c.lastSent // the acknowledged ping counts as a heartbeat sent then
	w.onAck(ack)
}

// onBeckon answers a new leader's beckon (roles/controller/sessions/
// beckon.go): the controller at the other end of standby c says it leads
// in a newer term than the leader acknowledging this worker. The worker
// pings it at once; its acknowledgement moves the session there
// (onStandbyMessage) without waiting to find the old leader silent. A
// false claim costs one ping, answered with a redirect or a refusal.
func (w *Worker) onBeckon(c *wconn, r *transport.Redirect) {
	if !w.alive || w.conn == nil || r.ControllerEpoch <= w.ackedByCtrl {
		return
	}
	w.met.beckoned.Inc()
	w.pingStandby(c, time.Now())
}
