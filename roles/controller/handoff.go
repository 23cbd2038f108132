package controller

import (
	"context"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// A controller restarted from its data dir that wins an election soon
// after it started hands the leadership on, once, to the reachable voter
// with the most of the log, when workers are registered. Its workers hold
// no standby connection to it yet: a worker dials a restarted controller
// again only after [T/2, 2T] (roles/worker/standby.go), and until then
// every worker would need a new mutual-TLS handshake with it, all of them
// within the self-fence margin. A leader killed with kill -9 and restarted
// at once often wins the next election itself: it campaigns as soon as it
// starts (replica's advanceElection) and has the longest log. With 2,000
// workers on the test machine that cost 1,893-1,984 of them their sessions; a
// peer that was running has every worker's standby, and a transfer costs
// a few milliseconds (docs/ARCHITECTURE.md, "What a failover costs a
// worker"). A new cluster's first controllers are not restarted: their
// workers dial them all alike, and there is no better one to hand to.

// handOffWindow is how long after start a controller passes on a
// leadership it wins: by then its workers' standbys are back.
func (c *Controller) handOffWindow() time.Duration { return 2 * c.cfg.SessionTimeout }

// maybeHandOff runs when this controller becomes leader; it must not
// block (the raft loop calls it).
func (c *Controller) maybeHandOff(term uint64) {
	if !c.restarted || time.Since(c.started) >= c.handOffWindow() || !c.handedOff.CompareAndSwap(false, true) {
		return
	}
	go c.handOff(term)
}

func (c *Controller) handOff(term uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(4*c.cfg.ElectionTicks)*c.cfg.TickInterval)
	defer cancel()
	go func() {
		select {
		case <-c.r.Stopping():
			cancel()
		case <-ctx.Done():
		}
	}()
	// A restarted controller replays its log after it starts: read the
	// workers only once it has applied everything committed.
	if err := c.r.LinearizableRead(ctx); err != nil || c.r.LeaderID() != c.cfg.NodeID || c.r.Term() != term {
		c.handedOff.Store(false) // not leading any more: keep it for a later election
		return
	}
	if !hasLiveWorkers(c.r.State()) {
		c.handedOff.Store(false) // nothing to spare the workers: keep it for a later election
		return
	}
	c.log.Info("leading soon after start while workers are registered: handing leadership to a controller that "+
		"holds their standby connections", "uptime", time.Since(c.started).Round(time.Millisecond), "term", term)
	if err := c.r.HandOff(ctx); err != nil {
		// Raft gave the transfer up (the target did not catch up in
		// time, on a loaded machine): the leadership stays here for now,
		// and a later election within the window may try again. Only a
		// hand-off that happened counts as the one per process.
		c.log.Info("leadership stays here", "err", err)
		c.handedOff.Store(false)
		return
	}
	c.handOffs.Inc()
}

// hasLiveWorkers reports whether any worker is registered and not fenced
// or gone.
func hasLiveWorkers(st *metadata.State) bool {
	for _, w := range st.Workers() {
		if w.State == metadata.WorkerAlive || w.State == metadata.WorkerDraining {
			return true
		}
	}
	return false
}
