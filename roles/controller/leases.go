package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
)

// lessor is the leader's in-memory view of lease deadlines (etcd's lessor):
// keep-alives only move a deadline here, nothing is committed. When a
// deadline passes, the leader commits OpLeaseRevoke with Expired set. A
// controller that gains leadership forgets every deadline, so each lease
// gets now + its full TTL: remaining TTLs are extended by at least the
// election time and never shortened.
type lessor struct {
	mu       sync.Mutex
	primary  bool
	deadline map[int64]time.Time
	now      func() time.Time
}

func newLessor() *lessor {
	return &lessor{deadline: map[int64]time.Time{}, now: time.Now}
}

// promote and demote run on the raft loop (leader hook); they must not block.
func (l *lessor) setPrimary(primary bool) {
	l.mu.Lock()
	l.primary = primary
	l.deadline = map[int64]time.Time{}
	l.mu.Unlock()
}

// sync reconciles deadlines with the replicated leases: new ones get now +
// TTL, gone ones are forgotten. It returns the expired ids (primary only).
func (l *lessor) sync(ttls map[int64]int64) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	now := l.now()
	var expired []int64
	for id, ttl := range ttls {
		d, ok := l.deadline[id]
		if !ok {
			l.deadline[id] = now.Add(time.Duration(ttl) * time.Millisecond)
			continue
		}
		if !now.Before(d) {
			expired = append(expired, id)
		}
	}
	for id := range l.deadline {
		if _, ok := ttls[id]; !ok {
			delete(l.deadline, id)
		}
	}
	return expired
}

// errLeaseExpiring answers a keep-alive that came after the lease's
// deadline: its expiry may already be proposed, so it cannot be extended.
var errLeaseExpiring = errors.New("lease expired; its revocation is being committed")

// refresh extends lease id to at+ttl (never shortens it). It fails with
// errNotLeader when this controller is not the primary lessor, and with
// errLeaseExpiring once the deadline passed: a keep-alive must never be
// acknowledged for a lease whose expiry may already be in the log.
func (l *lessor) refresh(id int64, ttl time.Duration, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return errNotLeader
	}
	cur, ok := l.deadline[id]
	if ok && !l.now().Before(cur) {
		return errLeaseExpiring
	}
	if d := at.Add(ttl); d.After(cur) {
		l.deadline[id] = d
	}
	return nil
}

// remaining returns the time left on lease id as the primary sees it.
func (l *lessor) remaining(id int64, ttl time.Duration) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return 0, false
	}
	d, ok := l.deadline[id]
	if !ok {
		return ttl, true // granted since the last sync: a full TTL
	}
	return max(0, d.Sub(l.now())), true
}

// leaseCheckInterval is how often the leader looks for expired leases.
const leaseCheckInterval = 100 * time.Millisecond

// expireLoop commits the expiry of leases whose deadline passed. It runs on
// every controller and acts only while this one leads.
func (c *Controller) expireLoop() {
	t := time.NewTicker(leaseCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stopc:
			return
		case <-t.C:
		}
		if !c.isLeader.Load() {
			continue
		}
		expired := c.lessor.sync(c.state.Load().LeaseTTLs())
		if len(expired) == 0 {
			continue
		}
		const batch = 1000
		for len(expired) > 0 {
			n := min(batch, len(expired))
			ids := expired[:n]
			expired = expired[n:]
			cmd, err := metadata.NewCoordCommand(metadata.OpLeaseRevoke, "", metadata.LeaseRevokePayload{IDs: ids, Expired: true})
			if err != nil {
				c.log.Error("encode lease expiry", "err", err)
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
			res, err := c.Propose(ctx, cmd)
			cancel()
			if err == nil {
				err = res.Err
			}
			if err != nil {
				c.log.Warn("commit lease expiry", "leases", len(ids), "err", err)
				break
			}
			c.leasesExpired.Add(float64(len(ids)))
			c.log.Info("leases expired", "count", len(ids), "first", ids[0])
		}
	}
}

// startCoord sets up leases and watches; it runs before the raft loop
// (Start then starts expireLoop with the other loops).
func (c *Controller) startCoord() {
	c.lessor = newLessor()
	c.hub = newWatchHub(DefaultWatchHistory, DefaultWatchBuffer)
	c.hub.reset(c.state.Load().Revision())
	c.leasesExpired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_leases_expired_total", Help: "Leases whose expiry this controller committed as leader."})
	c.reg.MustRegister(c.leasesExpired,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_leases", Help: "Live leases in the replicated state."},
			func() float64 { return float64(c.state.Load().LeaseCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_watchers", Help: "Open watch streams on this controller."},
			func() float64 { return float64(c.hub.watchers()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_watch_oldest_revision", Help: "Oldest revision a watch on this controller can start from."},
			func() float64 { return float64(c.hub.oldest()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_locks_held", Help: "Locks and elections with a holder in the replicated state."},
			func() float64 { h, _ := c.state.Load().LockCounts(); return float64(h) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_locks_waiters", Help: "Owners waiting for a lock or an election in the replicated state."},
			func() float64 { _, w := c.state.Load().LockCounts(); return float64(w) }))
	c.leaderHooks = append(c.leaderHooks, func(isLeader bool, _ uint64) { c.lessor.setPrimary(isLeader) })
}
