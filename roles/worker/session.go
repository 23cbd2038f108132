package worker

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/transport"
)

func (w *Worker) onTick(now time.Time) {
	if w.conn == nil {
		w.connect()
		return
	}
	if !w.alive {
		w.maybeRegister(now)
		return
	}
	w.maybeAbandonProbe(now)
	w.maybeProbe(now)
	w.sendHeartbeat(w.conn, now, false)
	w.silentT.Reset(w.silentAfter())
	w.flushReports(now)
	w.maintainStandbys(now)
}

// onSilenceCheck runs silentAfter past each heartbeat: a leader that died
// is noticed then, not at the second tick after its last answer, which
// alone would spend two of the three intervals of the self-fence margin.
func (w *Worker) onSilenceCheck(now time.Time) {
	if w.conn != nil && w.alive {
		w.maybeAbandonProbe(now)
		w.maybeProbe(now)
	}
}

// maybeProbe asks the other controllers who leads when the leader looks
// gone: a heartbeat unanswered and nothing at all received for
// silentAfter. It keeps the connection in case the leader is only slow.
func (w *Worker) maybeProbe(now time.Time) {
	if !w.leaderSilent(now) || w.probe != nil {
		return
	}
	if !w.dialing && !now.Before(w.probeAfter) {
		w.log.Info("leader is silent; asking the other controllers who leads",
			"controller", w.conn.addr, "silent_for", now.Sub(w.conn.lastRecv).Round(time.Millisecond))
	}
	w.startProbe(nil, now)
}

// silentAfter is how long a heartbeat may go unanswered, with nothing
// else arriving either, before the leader counts as silent: three
// quarters of an interval. A leader that answers late but still answers
// is overloaded, and every worker opening a handshake to the other
// controllers at once would only add to the load (a retry storm that
// turned a one-second stall into mass fencing in the 5,000-worker
// benchmark; the leader's longest stalls at 10,000 workers answered
// within 0.47 s); a deposed leader answers with a redirect instead.
func (w *Worker) silentAfter() time.Duration { return w.cfg.HeartbeatInterval * 3 / 4 }

// leaderSilent reports whether the current connection looks dead rather
// than slow (see silentAfter).
func (w *Worker) leaderSilent(now time.Time) bool {
	oldest, ok := w.oldestPending()
	after := w.silentAfter()
	return ok && now.Sub(oldest) >= after && now.Sub(w.conn.lastRecv) >= after
}

func (w *Worker) onKick(now time.Time) {
	if w.conn == nil {
		w.connect()
		return
	}
	if !w.alive {
		w.maybeRegister(now)
		return
	}
	w.maybeAbandonProbe(now)
	w.maybeReask(now)
}

func (w *Worker) kick(d time.Duration) { w.kickT.Reset(d) }

func (w *Worker) oldestPending() (time.Time, bool) {
	var oldest time.Time
	for _, t := range w.pending {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	return oldest, !oldest.IsZero()
}

func (w *Worker) maybeRegister(now time.Time) {
	if w.conn == nil || now.Before(w.notBefore) {
		return
	}
	if w.regSeq != 0 && now.Sub(w.regSentAt) < 2*w.cfg.HeartbeatInterval+w.timeout {
		return // one in flight; a registration waits for a commit
	}
	w.seq++
	w.regSeq, w.regSentAt = w.seq, now
	w.write(w.conn, &transport.Register{
		Seq: w.seq, WorkerID: w.id, Incarnation: w.incarnation, Version: w.cfg.Version, Addresses: w.cfg.Addresses,
		Labels: w.cfg.Labels, CPUMillis: uint64(w.cfg.CPUMillis), MemoryMB: uint64(w.cfg.MemoryMB),
		HeartbeatIntervalMS: uint64(w.cfg.HeartbeatInterval.Milliseconds()), SeenControllerEpoch: w.highestCtrl,
		HeldEpoch: w.epoch, // 0 until this process was first registered
	})
}

func (w *Worker) sendHeartbeat(c *wconn, now time.Time, leaving bool) {
	w.seq++
	w.pending[w.seq] = now
	w.met.sent.Inc()
	load := w.load()
	if w.jobs.runner != nil {
		load.RunningTasks = w.runningTasks()
	}
	w.write(c, &transport.Heartbeat{
		Seq: w.seq, WorkerID: w.id, Incarnation: w.incarnation, Epoch: w.epoch, Load: load, Leaving: leaving,
		HeartbeatIntervalMS: uint64(w.cfg.HeartbeatInterval.Milliseconds()), SeenControllerEpoch: w.highestCtrl,
		AssignVersion: w.jobs.assignVer,
	})
}

func (w *Worker) onInbound(in inbound) {
	c := w.connFor(in.connID)
	if c == nil {
		return // from a connection we already dropped
	}
	if c != w.conn && c != w.probe { // a standby
		if in.err != nil {
			w.log.Debug("standby connection lost", "controller", c.addr, "err", in.err)
			w.dropStandby(c)
			return
		}
		c.lastRecv = time.Now()
		if e := in.msg.CtrlEpoch(); e >= w.highestCtrl {
			w.onStandbyMessage(c, in.msg)
		}
		return
	}
	if in.err != nil {
		if c == w.probe {
			w.closeProbe()
			return
		}
		if w.stop.Err() == nil {
			w.log.Info("connection to controller lost", "controller", c.addr, "err", in.err)
		}
		w.setAvoid(c.addr, time.Now())
		w.dropConn()
		w.kick(w.retryShort())
		return
	}
	m := in.msg
	c.lastRecv = time.Now()
	if e := m.CtrlEpoch(); e < w.highestCtrl {
		w.met.staleCtrl.Inc()
		w.log.Warn("refusing a message from an older controller epoch", "controller", c.addr,
			"message", fmt.Sprintf("%T", m), "controller_epoch", e, "highest_seen", w.highestCtrl)
		if c == w.probe {
			w.closeProbe()
			return
		}
		w.dropConn()
		w.preferred = ""
		w.kick(w.retryShort())
		return
	} else if e > w.highestCtrl {
		w.highestCtrl = e
		w.pubCtrlEpoch.Store(e)
		w.met.ctrlEpoch.Set(float64(e))
	}
	if r, ok := m.(*transport.Redirect); ok && r.Seq == 0 {
		return // a new leader's beckon is for standbys (standby.go); here the session or a probe goes on
	}
	if c == w.probe {
		w.onProbeMessage(m, time.Now())
		return
	}
	switch m := m.(type) {
	case *transport.Registered:
		if w.regSeq != 0 && m.Seq == w.regSeq {
			w.becomeAlive(m)
		}
	case *transport.HeartbeatAck:
		w.onAck(m)
	case *transport.Redirect:
		w.onRedirect(m)
	case *transport.Refused:
		w.onRefused(m)
	case *transport.Assign:
		w.onAssign(m)
	case *transport.ReportAck:
		w.onReportAck(m)
	case *transport.LogRequest:
		w.onLogRequest(m)
	}
}

func (w *Worker) becomeAlive(m *transport.Registered) {
	w.alive, w.epoch = true, m.Epoch
	w.jobs.reset() // a new epoch starts with nothing: the leader assigns anew
	if m.SessionTimeoutMS > 0 {
		w.timeout = time.Duration(m.SessionTimeoutMS) * time.Millisecond
	}
	w.lastAcked = w.regSentAt
	w.ackedAt.Store(w.lastAcked.UnixNano())
	w.regSeq = 0
	w.lastRefusal = 0
	clear(w.pending)
	w.armFence()
	w.preferred = w.conn.addr
	w.ackedBy, w.ackedByCtrl = w.conn.addr, m.ControllerEpoch
	w.met.ackedCtrl.Set(float64(m.ControllerEpoch))
	w.pubLeader.Store(&w.conn.addr)
	w.pubEpoch.Store(m.Epoch)
	w.met.epoch.Set(float64(m.Epoch))
	w.met.registrations.Inc()
	w.setAlive(true)
	w.log.Info("worker registered: alive", "epoch", m.Epoch, "controller_epoch", m.ControllerEpoch,
		"leader", m.LeaderID, "controller", w.conn.addr, "session_timeout", w.timeout)
	if w.selfFenceAfter() < 3*w.cfg.HeartbeatInterval { // interval > timeout/5
		w.log.Warn("heartbeat interval is long for the leader's session timeout: keep it at most a fifth of it, or a lost heartbeat or a failover may fence this worker",
			"heartbeat_interval", w.cfg.HeartbeatInterval, "session_timeout", w.timeout, "self_fence_after", w.selfFenceAfter())
	}
	if w.cfg.OnAlive != nil {
		w.cfg.OnAlive(m.Epoch)
	}
}

func (w *Worker) onAck(m *transport.HeartbeatAck) {
	if !w.alive || m.Epoch != w.epoch {
		return
	}
	sent, ok := w.pending[m.Seq]
	if !ok {
		return
	}
	for s := range w.pending {
		if s <= m.Seq { // acks come in order: older ones were lost
			delete(w.pending, s)
		}
	}
	if m.SessionTimeoutMS > 0 {
		w.timeout = time.Duration(m.SessionTimeoutMS) * time.Millisecond
	}
	if sent.After(w.lastAcked) {
		w.lastAcked = sent
		w.ackedAt.Store(sent.UnixNano())
	}
	w.armFence()
	w.avoid = ""
	w.parkProbe() // the leader answered: nothing to look for
	rtt := time.Since(sent)
	w.met.acked.Inc()
	w.met.rtt.Observe(rtt.Seconds())
	if w.cfg.OnHeartbeatAck != nil {
		w.cfg.OnHeartbeatAck(rtt)
	}
	w.preferred = w.conn.addr
	if l := w.pubLeader.Load(); l == nil || *l != w.conn.addr {
		w.pubLeader.Store(&w.conn.addr)
		w.log.Info("heartbeating to a new leader", "controller", w.conn.addr, "controller_epoch", m.ControllerEpoch)
	}
	if w.ackedBy != w.conn.addr || w.ackedByCtrl != m.ControllerEpoch {
		w.ackedBy, w.ackedByCtrl = w.conn.addr, m.ControllerEpoch
		w.met.ackedCtrl.Set(float64(m.ControllerEpoch))
		if w.cfg.OnLeaderAck != nil {
			w.cfg.OnLeaderAck(w.conn.addr, m.ControllerEpoch, time.Now())
		}
	}
}

func (w *Worker) onRedirect(m *transport.Redirect) {
	from := w.conn.addr
	// The controller works, it just does not lead: keep its connection as
	// a standby.
	old := w.conn
	w.conn = nil
	w.dropConn()
	w.keepStandby(old)
	// A controller that still names the leader that just failed us, in
	// no newer a term than when it did, has likely not noticed yet: that
	// leader is gone (a restarted process, say), and dialing it would cost
	// a handshake and an unanswered heartbeat. Ask again soon instead, for
	// about as long as an election takes; after that the fault was more
	// likely on this side of the network, and the leader is followed.
	stale := m.LeaderAddr == w.avoid && m.ControllerEpoch <= w.avoidCtrl &&
		time.Since(w.avoidAt) < 3*w.cfg.HeartbeatInterval
	if m.LeaderAddr != "" && m.LeaderAddr != from && !stale {
		w.log.Info("following the leader", "leader", m.LeaderID, "address", m.LeaderAddr, "redirected_by", from)
		w.preferred = m.LeaderAddr
		if w.avoid == m.LeaderAddr {
			w.avoid = "" // a controller vouches for it
		}
		w.connect()
		return
	}
	w.preferred = ""
	w.kick(w.retryShort())
}

func (w *Worker) onRefused(m *transport.Refused) {
	now := time.Now()
	first := m.Code != w.lastRefusal
	w.lastRefusal = m.Code
	switch m.Code {
	case transport.RefuseStaleEpoch:
		w.becomeFenced(fmt.Sprintf("the leader refused epoch %d: %s", w.epoch, m.Message), true)
		w.regSeq = 0
		w.maybeRegister(now)
	case transport.RefuseDuplicate:
		if first {
			w.log.Warn("registration refused: another process holds this worker id", "reason", m.Message)
		}
		w.regSeq = 0
		w.notBefore = now.Add(w.cfg.HeartbeatInterval)
		w.kick(w.cfg.HeartbeatInterval)
	case transport.RefuseNotReady:
		w.log.Debug("controller not ready", "reason", m.Message)
		if m.Seq == w.regSeq {
			w.regSeq = 0
		}
		w.kick(w.retryShort())
	default:
		w.log.Error("controller refused the worker", "code", m.Code.String(), "reason", m.Message)
		w.regSeq = 0
		w.notBefore = now.Add(5 * w.cfg.HeartbeatInterval)
		w.kick(5 * w.cfg.HeartbeatInterval)
	}
}

func (w *Worker) selfFenceAfter() time.Duration {
	return time.Duration(SelfFenceFraction * float64(w.timeout))
}

func (w *Worker) armFence() {
	w.fenceT.Reset(max(time.Until(w.lastAcked.Add(w.selfFenceAfter())), 0))
}

func (w *Worker) onFenceTimer(now time.Time) {
	// An acknowledgement that already arrived but waits in the inbox (this
	// process was not scheduled) still counts: handle what is queued first.
	for drained := false; !drained; {
		select {
		case in := <-w.inbox:
			w.onInbound(in)
		default:
			drained = true
		}
	}
	if !w.alive {
		return
	}
	if deadline := w.lastAcked.Add(w.selfFenceAfter()); now.Before(deadline) {
		w.fenceT.Reset(deadline.Sub(now))
		return
	}
	w.becomeFenced(fmt.Sprintf("no heartbeat acknowledged for %s (self-fence time %s = %.1f x session timeout %s)",
		now.Sub(w.lastAcked).Round(time.Millisecond), w.selfFenceAfter(), SelfFenceFraction, w.timeout), false)
	// Register again: on the same connection if it still brings answers
	// (the leader may just be slow), else wherever a leader answers.
	if w.conn != nil && now.Sub(w.conn.lastRecv) > w.cfg.HeartbeatInterval {
		w.setAvoid(w.conn.addr, now)
		w.dropConn()
		w.connect()
		return
	}
	w.regSeq = 0
	w.maybeRegister(now)
}

// becomeFenced stops the session: from now on the worker must not act on
// the old epoch. It registers again (new epoch) once it reaches a leader.
func (w *Worker) becomeFenced(reason string, byController bool) {
	if !w.alive {
		return
	}
	w.alive = false
	w.ackedAt.Store(0)
	w.fenceT.Stop()
	clear(w.pending)
	w.closeProbe()
	w.setAlive(false)
	if byController {
		w.met.refusedFencings.Inc()
	} else {
		w.met.selfFencings.Inc()
	}
	w.log.Warn("worker fenced: stopping work", "epoch", w.epoch, "by_controller", byController, "reason", reason)
	if w.jobs.runner != nil {
		w.jobs.runner.KillAll(reason)
	}
	w.jobs.reset()
	if w.cfg.OnFenced != nil {
		w.cfg.OnFenced(w.epoch)
	}
}

// leaveCluster tells the leader this worker is shutting down, following
// redirects, for at most min(session timeout, 5s).
func (w *Worker) leaveCluster() {
	if !w.alive {
		return
	}
	w.closeProbe()
	deadline := time.NewTimer(min(w.timeout, 5*time.Second))
	defer deadline.Stop()
	retry := time.NewTicker(w.retryShort())
	defer retry.Stop()
	sent := false
	for {
		if w.conn == nil {
			w.connect()
		} else if !sent {
			w.sendHeartbeat(w.conn, time.Now(), true)
			sent = w.conn != nil
		}
		select {
		case <-deadline.C:
			w.log.Warn("could not tell the leader this worker is leaving; it will be fenced after the session timeout")
			return
		case <-retry.C:
		case r := <-w.dialc:
			w.onDial(r)
			w.closeProbe()
			sent = false
		case in := <-w.inbox:
			if w.conn == nil || in.connID != w.conn.id {
				continue
			}
			if in.err != nil {
				w.dropConn()
				sent = false
				continue
			}
			switch m := in.msg.(type) {
			case *transport.HeartbeatAck:
				if m.Left && m.Epoch == w.epoch {
					w.log.Info("left the cluster", "epoch", w.epoch)
					return
				}
			case *transport.Redirect:
				w.onRedirect(m)
				sent = false
			case *transport.Refused:
				if m.Code == transport.RefuseStaleEpoch {
					w.log.Info("not leaving: the leader already fenced this epoch", "epoch", w.epoch)
					return
				}
				sent = false
			}
		}
	}
}
