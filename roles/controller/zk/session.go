package zk

import (
	"sync"
	"time"
)

// keepAlive collects the sessions active since the last batch; the
// batcher refreshes them all with one Backend.KeepAlive call.
type keepAlive struct {
	mu     sync.Mutex
	active map[int64]struct{}
}

func (k *keepAlive) touch(sid int64) {
	if sid == 0 {
		return
	}
	k.mu.Lock()
	k.active[sid] = struct{}{}
	k.mu.Unlock()
}

func (k *keepAlive) take() []int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.active) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(k.active))
	for id := range k.active {
		ids = append(ids, id)
	}
	k.active = make(map[int64]struct{}, len(ids))
	return ids
}

// keepAliveInterval is the batcher's period: well inside the shortest
// session timeout, and at most half a second.
func (s *Server) keepAliveInterval() time.Duration {
	return max(min(s.cfg.MinSessionTimeout/6, 500*time.Millisecond), 10*time.Millisecond)
}

// keepAliveLoop refreshes the active sessions' leases at the leader and
// closes the connections of the sessions the leader reports expired.
func (s *Server) keepAliveLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.keepAliveInterval())
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.keepAliveOnce()
	}
}

func (s *Server) keepAliveOnce() {
	ids := s.keep.take()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := s.timeoutCtx(s.cfg.MinSessionTimeout / 2)
	missing, err := s.b.KeepAlive(ctx, ids)
	cancel()
	if err != nil {
		// No leader for now: try these again next time. A session the
		// leader expires meanwhile is reported missing then.
		for _, id := range ids {
			s.keep.touch(id)
		}
		s.log.Warn("zk: keep-alive failed", "sessions", len(ids), "err", err)
		return
	}
	for _, id := range missing {
		s.expired(id)
	}
}

// expired ends the connections of a session the leader expired. Nothing
// more is sent on them; their clients reconnect and learn the session
// expired from the handshake.
func (s *Server) expired(sid int64) {
	conns := s.connsOf(sid)
	if len(conns) == 0 {
		return
	}
	s.met.expirations.Inc()
	s.log.Info("zk: session expired", "session", hexID(sid), "connections", len(conns))
	for _, c := range conns {
		c.close("session expired")
	}
}
