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
	// ok is when each session served here was last refreshed at the
	// leader (or bound here): a session whose refreshes stopped reaching
	// the leader is moved away before the leader can expire it.
	ok map[int64]time.Time
}

// refreshed records that ids were refreshed at the leader at (or bound
// here then).
func (k *keepAlive) refreshed(at time.Time, ids ...int64) {
	k.mu.Lock()
	if k.ok == nil {
		k.ok = map[int64]time.Time{}
	}
	for _, id := range ids {
		if at.After(k.ok[id]) {
			k.ok[id] = at
		}
	}
	k.mu.Unlock()
}

// lastOK returns when sid was last refreshed, ok false if never.
func (k *keepAlive) lastOK(sid int64) (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.ok[sid]
	return t, ok
}

// forget drops sid's record (no connection serves it here any more).
func (k *keepAlive) forget(sid int64) {
	k.mu.Lock()
	delete(k.ok, sid)
	k.mu.Unlock()
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
	defer s.moveStranded()
	ids := s.keep.take()
	if len(ids) == 0 {
		return
	}
	start := s.b.Now()
	ctx, cancel := s.timeoutCtx(s.cfg.MinSessionTimeout / 2)
	missing, err := s.b.KeepAlive(ctx, ids)
	cancel()
	if err == nil {
		gone := make(map[int64]bool, len(missing))
		for _, id := range missing {
			gone[id] = true
		}
		alive := make([]int64, 0, len(ids))
		for _, id := range ids {
			if !gone[id] {
				alive = append(alive, id)
			}
		}
		s.keep.refreshed(start, alive...)
	}
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

// moveStranded closes the connections of sessions whose refreshes have not
// reached the leader for half their timeout (this controller lost the
// leader: partitioned, or the quorum is gone). Their pings are answered
// here, so without this their clients would stay while the leader expires
// them; closed, they reconnect to a controller that reaches the leader,
// with half the timeout left to do it, as a ZooKeeper follower drops its
// clients when it loses its leader. A leader failover is shorter than half
// the shortest timeout, so it moves no one.
func (s *Server) moveStranded() {
	now := s.b.Now()
	s.mu.RLock()
	var stranded []*conn
	for sid, set := range s.sessions {
		last, ok := s.keep.lastOK(sid)
		if !ok {
			continue
		}
		for c := range set {
			if now.Sub(last) > c.timeout/2 {
				stranded = append(stranded, c)
			}
		}
	}
	s.mu.RUnlock()
	for _, c := range stranded {
		s.met.stranded.Inc()
		c.close("no keep-alive reached the leader for half the session timeout; the client moves to another controller")
	}
}
