package replica

import (
	"context"
	"fmt"
)

// A controller restarted right after a burst of writes replays every entry
// applied since its last snapshot before it can answer, and the adaptive
// interval (snapshotDue) lets a large state go up to ten times
// SnapshotEvery entries between snapshots, to keep them off the write
// path. At a million keys that was 100,000-130,000 entries per controller,
// the largest part of a restart that missed its 3 s (docs/PERFORMANCE.md,
// "A million keys on a slower machine"). So a controller stopped on
// purpose first snapshots what it applied, when at least SnapshotEvery
// entries lie beyond its last snapshot: its stop takes that much longer
// (about a second at a million keys), and its next start replays nothing.
// A crash gains nothing, and loses nothing either: the snapshot is written
// whole under a temporary name, as any other (raftlog).

// SnapshotBeforeStop takes a snapshot of the applied state if at least
// SnapshotEvery entries were applied since the last one, and waits until
// it is written or ctx ends. It returns at once when none is worth taking.
// Call it before Stop.
func (c *Replica) SnapshotBeforeStop(ctx context.Context) error {
	done := make(chan error, 1) // the apply loop never blocks on it
	select {
	case c.stopSnapReq <- done:
	case <-c.stopc:
		return ErrStopped
	case <-c.halt: // the apply loop ended (a storage failure): none to wait for
		return ErrStopped
	case <-ctx.Done():
		return fmt.Errorf("snapshot before stop: %w", ctx.Err())
	}
	select {
	case err := <-done:
		return err
	case <-c.stopc:
		return ErrStopped
	case <-c.halt:
		return ErrStopped
	case <-ctx.Done():
		return fmt.Errorf("snapshot before stop: %w", ctx.Err())
	}
}

// stopSnapshotRequested runs on the apply loop: it forces the next
// snapshot (maybeSnapshot) when enough was applied, or answers at once.
func (c *Replica) stopSnapshotRequested(done chan error) {
	if !c.snapBusy && !c.stopSnapshotWorth() {
		done <- nil
		return
	}
	if c.snapBusy {
		c.log.Info("stop waits for the snapshot being written", "snapshot_index", c.snapIndex, "applied", c.state.Load().AppliedIndex())
	}
	c.stopSnapWaiter, c.snapForced = done, true
	c.maybeSnapshot()
}

// stopSnapshotProgress runs on the apply loop after a snapshot finished:
// a forced snapshot not started yet (one was under way when it was asked
// for) starts now; once none is pending or running, the waiter hears.
func (c *Replica) stopSnapshotProgress(err error) {
	if c.stopSnapWaiter == nil {
		return
	}
	if err == nil && c.snapForced {
		// The one under way may have covered enough: the same rule as
		// when it was asked for.
		if c.stopSnapshotWorth() {
			c.maybeSnapshot()
		} else {
			c.snapForced = false
		}
	}
	if err != nil || (!c.snapForced && !c.snapBusy) {
		c.stopSnapWaiter <- err
		c.stopSnapWaiter = nil
	}
}

// stopSnapshotWorth is the rule: at least SnapshotEvery entries applied
// beyond the last snapshot.
func (c *Replica) stopSnapshotWorth() bool {
	return c.state.Load().AppliedIndex() >= c.snapIndex+c.cfg.SnapshotEvery
}
