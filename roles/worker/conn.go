package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/corral-dev/corral/transport"
)

// A worker keeps one connection, to the leader once it knows it. When the
// leader is late to acknowledge a heartbeat the worker does not tear that
// connection down (an overloaded leader would then also pay for new
// handshakes, and collapse); it opens a probe to the other controllers
// instead. A probe that reaches a new leader replaces the connection; one
// that is redirected to the current leader is closed: the leader is slow,
// not gone.

func (w *Worker) connFor(id uint64) *wconn {
	switch {
	case w.conn != nil && w.conn.id == id:
		return w.conn
	case w.probe != nil && w.probe.id == id:
		return w.probe
	}
	for _, c := range w.standby {
		if c.id == id {
			return c
		}
	}
	return nil
}

// connect dials the leader if known, else every controller, hedged: the
// next address is tried when the previous one has not answered quickly.
// The controller that just failed is tried last.
func (w *Worker) connect() {
	if w.dialing || w.conn != nil {
		return
	}
	targets := make([]string, 0, len(w.cfg.Controllers)+1)
	if w.preferred != "" && w.preferred != w.avoid {
		targets = append(targets, w.preferred)
	}
	for _, a := range w.cfg.Controllers {
		if a != w.avoid && !slices.Contains(targets, a) {
			targets = append(targets, a)
		}
	}
	if w.avoid != "" {
		targets = append(targets, w.avoid)
	}
	// A standby is an open connection: no handshake, no wait. When the
	// leader is known only its own will do (another would redirect to it).
	standbys := targets
	if w.preferred != "" && w.preferred != w.avoid {
		standbys = targets[:1]
	}
	for _, a := range standbys {
		if c := w.takeStandby(a); c != nil {
			w.log.Debug("resuming on a standby connection", "controller", a)
			w.useConn(c, time.Now())
			return
		}
	}
	// A controller this worker holds a standby to answers on it already:
	// a second connection would cost it a handshake, and keepStandby
	// would close one of the two. When every worker must reach a new
	// leader it has no standby to (one that restarted, say), hedging to
	// such followers made each worker dial every controller.
	targets = slices.DeleteFunc(targets, func(a string) bool { return w.standby[a] != nil })
	if len(targets) == 0 {
		w.preferred = ""
		w.kick(w.retryShort()) // ask the standbys who leads
		return
	}
	w.startDial(targets, len(targets) == 1 && targets[0] == w.preferred)
}

// startProbe asks controllers other than the current one who leads.
func (w *Worker) startProbe(targets []string, now time.Time) {
	if w.dialing || w.probe != nil || w.conn == nil || now.Before(w.probeAfter) {
		return
	}
	if targets == nil {
		for _, a := range w.cfg.Controllers {
			if a != w.conn.addr {
				targets = append(targets, a)
			}
		}
	}
	if len(targets) == 0 {
		return
	}
	w.probeTargets = targets
	if c := w.takeProbeStandby(targets, now); c != nil {
		w.probe = c
		w.log.Debug("probing for the leader on a standby connection", "current", w.conn.addr, "probe", c.addr)
		w.sendHeartbeat(c, now, false)
		w.probeWait = w.silentAfter()
		w.noteProbeAsked(now)
		return
	}
	w.startDial(targets, false)
}

// startDial dials targets in the background; leaderOnly is a dial of the
// named leader alone (dialTimes).
func (w *Worker) startDial(targets []string, leaderOnly bool) {
	w.dialing = true
	timeout, hedge := w.dialTimes(leaderOnly, time.Now())
	go w.dial(targets, timeout, hedge, false)
}

// dialTimes says how long a dial may take and when it tries the next
// target; leaderOnly is a dial of the named leader alone.
func (w *Worker) dialTimes(leaderOnly bool, now time.Time) (timeout, hedge time.Duration) {
	// After failures, give handshakes more time and stop hedging: when
	// controllers are too busy to finish handshakes, abandoning them
	// half-way and starting more only adds to their load.
	timeout = w.cfg.DialTimeout << min(w.dialFails, 2)
	// Hedge late enough that a loaded but healthy first choice (the
	// leader) usually wins, early enough to leave most of the self-fence
	// margin.
	hedge = min(w.cfg.DialTimeout/4, 500*time.Millisecond)
	if w.dialFails > 0 {
		hedge = timeout
	}
	// A leader named by the standbys, which cover the rest: abandoning a
	// slow handshake helps nobody, since no other controller can take the
	// session, and the leader, busy with every worker's handshake at
	// once, would only be sent more of them. It gets until the self-fence
	// deadline instead.
	if leaderOnly && w.alive {
		timeout = max(timeout, w.lastAcked.Add(w.selfFenceAfter()).Sub(now))
	}
	return timeout, hedge
}

func (w *Worker) dial(targets []string, timeout, hedge time.Duration, standby bool) {
	ctx, cancel := context.WithTimeout(w.life, timeout)
	defer cancel()
	results := make(chan dialResult, len(targets))
	started, outstanding := 0, 0
	next := time.NewTimer(0)
	defer next.Stop()
	ctxDone := ctx.Done()
	var errs []error
	for {
		select {
		case <-next.C:
			if started < len(targets) {
				addr := targets[started]
				started++
				outstanding++
				go func() {
					s, err := w.dialer.DialStream(ctx, addr)
					results <- dialResult{s: s, addr: addr, err: err, standby: standby}
				}()
				if started < len(targets) {
					next.Reset(hedge)
				}
			}
		case r := <-results:
			outstanding--
			if r.err == nil {
				cancel()
				go func(n int) { // close the losers of the race
					for range n {
						if r := <-results; r.err == nil {
							_ = r.s.Close()
						}
					}
				}(outstanding)
				w.deliverDial(r)
				return
			}
			errs = append(errs, r.err)
			if started < len(targets) {
				next.Reset(0)
			} else if outstanding == 0 {
				w.deliverDial(dialResult{err: errors.Join(errs...), addr: targets[0], standby: standby})
				return
			}
		case <-ctxDone:
			ctxDone = nil
			started = len(targets) // wait for the outstanding dials to fail
			if outstanding == 0 {
				w.deliverDial(dialResult{err: errors.Join(append(errs, ctx.Err())...), addr: targets[0], standby: standby})
				return
			}
		}
	}
}

func (w *Worker) deliverDial(r dialResult) {
	select {
	case w.dialc <- r:
	case <-w.life.Done():
		if r.s != nil {
			_ = r.s.Close()
		}
	}
}

func (w *Worker) onDial(r dialResult) {
	if r.standby {
		w.onStandbyDial(r)
		return
	}
	w.dialing = false
	if r.err != nil {
		if w.conn != nil {
			// Do not hammer controllers that could not even finish a
			// handshake: wait one to two intervals before the next probe.
			w.log.Debug("probe found no other controller", "err", r.err)
			w.probeAfter = time.Now().Add(w.cfg.HeartbeatInterval + rand.N(w.cfg.HeartbeatInterval))
			return
		}
		w.dialFails++
		lvl := slog.LevelDebug
		if w.dialFails == 1 {
			lvl = slog.LevelWarn
		}
		w.log.Log(context.Background(), lvl, "cannot reach any controller", "attempt", w.dialFails, "err", r.err)
		w.preferred = ""
		w.kick(w.dialBackoff())
		return
	}
	if w.stop.Err() != nil && !w.leave.Load() {
		_ = r.s.Close()
		return
	}
	w.connSeq++
	c := &wconn{id: w.connSeq, s: r.s, addr: r.addr, fresh: true}
	w.met.reconnects.Inc()
	go w.read(c)
	now := time.Now()
	if w.conn != nil {
		if !w.alive {
			_ = c.s.Close() // a registration in flight does not need a probe
			return
		}
		w.probe = c
		w.log.Debug("probing for the leader", "current", w.conn.addr, "probe", c.addr)
		w.sendHeartbeat(c, now, false)
		w.probeWait = w.cfg.DialTimeout
		w.noteProbeAsked(now)
		return
	}
	w.log.Debug("connected to controller", "controller", r.addr)
	w.useConn(c, now)
}

// useConn makes c the session's connection: resume the session on it, or
// register.
func (w *Worker) useConn(c *wconn, now time.Time) {
	w.dialFails = 0
	w.conn = c
	if w.alive {
		w.sendHeartbeat(c, now, false) // resume the session on the (new) leader
	} else {
		w.maybeRegister(now)
	}
}

func (w *Worker) read(c *wconn) {
	br := bufio.NewReaderSize(c.s, 4096)
	var buf []byte
	for {
		m, b, err := transport.ReadControllerMessage(br, buf)
		buf = b
		var cm transport.ControllerMessage
		if err == nil {
			var ok bool
			if cm, ok = m.(transport.ControllerMessage); !ok {
				err = fmt.Errorf("controller sent a worker message (%T)", m)
			}
		}
		select {
		case w.inbox <- inbound{connID: c.id, msg: cm, err: err}:
		case <-w.life.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// dialBackoff is the wait before the next attempt after dialFails failed
// ones: exponential from retryShort up to four heartbeat intervals,
// jittered over its upper half so that many workers cut off together (a
// failover, a network blip) do not come back in lockstep.
func (w *Worker) dialBackoff() time.Duration {
	d := min(w.retryShort()<<min(w.dialFails, 8), 4*w.cfg.HeartbeatInterval)
	return d/2 + rand.N(d/2+1)
}

// write sends m on c; a failure closes c.
func (w *Worker) write(c *wconn, m transport.WorkerMessage) {
	if c == nil {
		return
	}
	w.out = w.out[:0]
	if c.fresh {
		w.out = append(w.out, transport.WorkerPreamble()...)
	}
	out, err := transport.AppendWorkerFrame(w.out, m)
	if err != nil {
		w.log.Error("encode message for the controller", "err", err)
		return
	}
	w.out = out
	if now := time.Now(); c.writeDL.Sub(now) < w.cfg.HeartbeatInterval {
		c.writeDL = now.Add(2*w.cfg.HeartbeatInterval + time.Second)
		_ = c.s.SetWriteDeadline(c.writeDL)
	}
	if _, err := c.s.Write(out); err != nil {
		if c == w.probe {
			w.closeProbe()
			return
		}
		if c != w.conn {
			w.dropStandby(c)
			return
		}
		w.log.Info("connection to controller failed", "controller", c.addr, "err", err)
		w.setAvoid(c.addr, time.Now())
		w.dropConn()
		w.kick(w.retryShort())
		return
	}
	c.fresh = false
}

// setAvoid records that the controller at addr just failed the session:
// it is tried last, and a redirect naming it in no newer a term is not
// followed for a while (onRedirect).
func (w *Worker) setAvoid(addr string, now time.Time) {
	w.avoid, w.avoidCtrl, w.avoidAt = addr, w.highestCtrl, now
}

// dropConn closes the connection, parks any probe as a standby, and
// forgets what was in flight.
func (w *Worker) dropConn() {
	w.parkProbe() // the probe's controller did nothing wrong
	if w.conn != nil {
		_ = w.conn.s.Close()
		w.conn = nil
	}
	clear(w.pending)
	w.regSeq = 0
}

func (w *Worker) closeProbe() {
	if w.probe != nil {
		_ = w.probe.s.Close()
		w.probe = nil
	}
	w.probeReask, w.probeTries, w.probeAsked, w.probeTargets = time.Time{}, 0, time.Time{}, nil
}

// parkProbe ends the probe but keeps its connection, which works, as a
// standby.
func (w *Worker) parkProbe() {
	if w.probe != nil {
		w.keepStandby(w.probe)
		w.probe = nil
	}
	w.probeReask, w.probeTries, w.probeAsked, w.probeTargets = time.Time{}, 0, time.Time{}, nil
}

// reaskLater keeps the probe open and asks on it again soon: the
// controller it reached does not know a new leader yet (the election is
// still running) or is the new leader still loading its session table.
// Asking again on the same connection costs the controller one small
// message and no handshake; the wait starts at retryShort (125 ms at the
// default interval) and doubles up to a quarter of an interval, so the
// worker learns of the new leader within that of its election
// (docs/ARCHITECTURE.md, "What happens when the leader dies").
func (w *Worker) reaskLater(now time.Time) {
	d := min(w.retryShort()<<min(w.probeTries, 3), max(w.cfg.HeartbeatInterval/4, w.retryShort()))
	w.probeTries++
	w.probeReask = now.Add(d)
	w.kick(d)
}

// maybeReask asks again on the probe once its wait is over, while the
// session's own connection is still silent; a leader that spoke up again
// makes the probe pointless.
func (w *Worker) maybeReask(now time.Time) {
	if w.probe == nil || w.probeReask.IsZero() || now.Before(w.probeReask) {
		return
	}
	w.probeReask = time.Time{}
	if w.conn == nil || !w.leaderSilent(now) {
		w.parkProbe()
		return
	}
	w.sendHeartbeat(w.probe, now, false)
	w.noteProbeAsked(now)
}

// promoteProbe makes the probe the session's connection: it reached the
// leader while the old connection did not.
func (w *Worker) promoteProbe() {
	old := w.conn
	w.log.Info("switching to the controller that answered", "from", old.addr, "to", w.probe.addr)
	_ = old.s.Close()
	w.setAvoid(old.addr, time.Now())
	w.redialStandbyLater(time.Now())
	w.conn, w.probe = w.probe, nil
	w.probeReask, w.probeTries, w.probeAsked, w.probeTargets = time.Time{}, 0, time.Time{}, nil
}

// onProbeMessage handles what a probe brings back.
func (w *Worker) onProbeMessage(m transport.ControllerMessage, now time.Time) {
	switch m := m.(type) {
	case *transport.HeartbeatAck:
		w.promoteProbe()
		w.onAck(m)
	case *transport.Refused:
		switch m.Code {
		case transport.RefuseStaleEpoch:
			w.promoteProbe() // a leader says the epoch is dead: believe it
			w.onRefused(m)
		case transport.RefuseNotReady:
			w.reaskLater(now) // the new leader, still loading its sessions
		default:
			w.closeProbe()
		}
	case *transport.Redirect:
		switch {
		case m.LeaderAddr == w.conn.addr && m.ControllerEpoch > w.ackedByCtrl && w.leaderSilent(now):
			w.reconnectToLeader(now)
		case m.LeaderAddr == "" || m.LeaderAddr == w.conn.addr:
			if w.leaderSilent(now) {
				// No new leader known yet: the election is still running,
				// or this controller has not noticed the old leader is
				// gone. Ask again soon rather than wait an interval.
				w.reaskLater(now)
				return
			}
			// The leader spoke up meanwhile: it is slow, not gone. Keep
			// it, and do not ask again for a while.
			w.parkProbe()
			w.probeAfter = now.Add(2 * w.cfg.HeartbeatInterval)
		default:
			w.parkProbe()
			w.startProbe([]string{m.LeaderAddr}, now)
		}
	default:
		w.parkProbe()
	}
}
