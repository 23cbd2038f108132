package coord

import (
	"context"
	"errors"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
)

// Replica is what keep-alives and lock waits need of the raft member:
// reads of the applied state, a linearizable barrier and proposals. The
// controller passes its replica.
type Replica interface {
	State() *metadata.State
	LinearizableRead(ctx context.Context) error
	// Applied returns the applied index and a channel closed when it
	// changes.
	Applied() (uint64, <-chan struct{})
	Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error)
	// Stopping is closed when the controller begins to stop.
	Stopping() <-chan struct{}
}

// LeaseTTL is a lease a keep-alive found alive, with its TTL.
type LeaseTTL struct {
	ID    int64
	TTLMS int64
}

// KeepAlive refreshes leases on the primary lessor l. The deadline counts
// from before the leadership check (a ReadIndex round), so a deposed
// leader's answer can never promise more than its successor's reset (now +
// TTL) grants. missing lists the ids that are gone or already expiring.
// ErrNotPrimary means this controller does not lead.
func KeepAlive(ctx context.Context, r Replica, l *Lessor, ids []int64) (alive []LeaseTTL, missing []int64, err error) {
	start := time.Now()
	if err := r.LinearizableRead(ctx); err != nil {
		return nil, nil, err
	}
	st := r.State()
	for _, id := range ids {
		ls, ok := st.Lease(id)
		if !ok {
			missing = append(missing, id)
			continue
		}
		switch err := l.Refresh(id, time.Duration(ls.TTLMS)*time.Millisecond, start); {
		case errors.Is(err, ErrLeaseExpiring):
			missing = append(missing, id)
			continue
		case err != nil:
			return nil, nil, err
		}
		alive = append(alive, LeaseTTL{ID: id, TTLMS: ls.TTLMS})
	}
	return alive, missing, nil
}

// AwaitLock waits up to wait for key (a lock or an election) to be granted
// to lease on the applied state, then gives up by committing a
// waiting-only release, bounded by giveUp. The release commits after any
// grant already in the log, so its answer is the final word.
func AwaitLock(ctx context.Context, r Replica, key string, lease int64, wait, giveUp time.Duration) (metadata.LockStatus, error) {
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		_, changed := r.Applied()
		st := r.State()
		if lk, _ := st.LockState(key); lk.Holder != nil && lk.Holder.Lease == lease {
			return metadata.LockStatus{Held: true, Token: lk.Holder.Token}, nil
		}
		if _, ok := st.Lease(lease); !ok {
			return metadata.LockStatus{}, fault.New(fault.NotFound, "lease_not_found", "lease %d ended while waiting for the lock", lease)
		}
		select {
		case <-changed:
			continue
		case <-tctx.Done():
		case <-r.Stopping():
			return metadata.LockStatus{}, fault.ErrStopped
		}
		break
	}
	// Giving up is not fenced with the request's ACL revision: refused
	// after an ACL change, it would leave the lease queued, to be granted
	// the lock later while its client was told it did not get it.
	gctx, gcancel := context.WithTimeout(metadata.WithoutACLFence(context.WithoutCancel(ctx)), giveUp)
	defer gcancel()
	cmd, err := metadata.NewCoordCommand(metadata.OpLockRelease, key, metadata.LockPayload{Lease: lease, WaitingOnly: true})
	if err != nil {
		return metadata.LockStatus{}, err
	}
	res, err := r.Propose(gctx, cmd)
	if err != nil {
		return metadata.LockStatus{}, err
	}
	return res.Out.(metadata.LockStatus), nil
}
