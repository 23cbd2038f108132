package controller

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/coord"
)

// The controller's side of leases and watches (package coord): the loop
// that commits lease expiry through raft, and the API's answers for the
// coord package's errors.

// leaseCheckInterval is how often the leader looks for expired leases.
const leaseCheckInterval = 100 * time.Millisecond

// expireLoop commits the expiry of leases whose deadline passed. It runs on
// every controller and acts only while this one leads.
func (c *Controller) expireLoop() {
	t := time.NewTicker(leaseCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.r.Stopping():
			return
		case <-t.C:
		}
		if !c.r.IsLeader() {
			continue
		}
		expired := c.lessor.Sync(c.r.State().LeaseTTLs())
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
			_, err = c.Propose(ctx, cmd)
			cancel()
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
	c.lessor = coord.NewLessor()
	c.hub = coord.NewHub(coord.DefaultWatchHistory, coord.DefaultWatchBuffer)
	c.hub.SetMaxWatchers(c.cfg.MaxWatches)
	c.hub.Reset(c.r.State().Revision())
	c.leasesExpired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_leases_expired_total", Help: "Leases whose expiry this controller committed as leader."})
	c.reg.MustRegister(c.leasesExpired,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_leases", Help: "Live leases in the replicated state."},
			func() float64 { return float64(c.r.State().LeaseCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_watchers", Help: "Open watch streams on this controller."},
			func() float64 { return float64(c.hub.Watchers()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_watch_oldest_revision", Help: "Oldest revision a watch on this controller can start from."},
			func() float64 { return float64(c.hub.Oldest()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_locks_held", Help: "Locks and elections with a holder in the replicated state."},
			func() float64 { h, _ := c.r.State().LockCounts(); return float64(h) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_locks_waiters", Help: "Owners waiting for a lock or an election in the replicated state."},
			func() float64 { _, w := c.r.State().LockCounts(); return float64(w) }))
}

// subscribeWatch subscribes to the watch hub (coord.Hub.Subscribe); a
// closed hub means the controller is stopping, and is answered so.
func (c *Controller) subscribeWatch(prefix string, from int64) (*coord.Watcher, []metadata.Event, int64, error) {
	w, backlog, last, err := c.hub.Subscribe(prefix, from)
	if errors.Is(err, coord.ErrClosed) {
		return nil, nil, 0, ErrStopped
	}
	return w, backlog, last, err
}
