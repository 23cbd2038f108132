package sessions

import (
	"github.com/corral-dev/corral/transport"
)

// A new leader beckons the workers. Each live worker keeps an idle
// standby stream to every controller besides its leader. When one of
// those controllers becomes leader, it tells every worker stream it has
// at once that it leads now, with an unsolicited redirect (sequence
// number 0) naming itself; a worker acts on it only on a standby. The worker pings that standby straight away, and the
// acknowledgement moves its session there (roles/worker/standby.go),
// instead of waiting to find its old leader silent: up to one heartbeat
// interval and three quarters of another after the old leader's last
// answer. The session table is loaded first (takeOver), so those pings
// are acknowledged, not refused as "not ready".

// streamsLocked returns the open worker streams. Most are standbys;
// a worker ignores the beckon on its session stream or a probe.
func (m *Manager) streamsLocked() []*streamWriter {
	outs := make([]*streamWriter, 0, len(m.streams))
	for out := range m.streams {
		outs = append(outs, out)
	}
	return outs
}

// addStream records a stream past its preamble.
func (m *Manager) addStream(out *streamWriter) {
	m.mu.Lock()
	m.streams[out] = struct{}{}
	m.mu.Unlock()
}

// forgetStream drops a stream that ended.
func (m *Manager) forgetStream(out *streamWriter) {
	m.mu.Lock()
	delete(m.streams, out)
	m.mu.Unlock()
}

// beckon tells each worker stream that this controller leads in term,
// while it still does. A write that fails only means that worker finds
// out the usual way.
func (m *Manager) beckon(gen, term uint64, outs []*streamWriter) {
	addr, _ := m.c.MemberAddress(m.cfg.NodeID)
	if addr == "" || len(outs) == 0 {
		return
	}
	msg := &transport.Redirect{ControllerEpoch: term, LeaderID: m.cfg.NodeID, LeaderAddr: addr}
	for _, out := range outs {
		if !m.current(gen) {
			return
		}
		if out.write(msg) == nil {
			m.met.beckons.Inc()
		}
	}
	m.log.Info("worker sessions: beckoned the workers", "streams", len(outs), "controller_epoch", term)
}
