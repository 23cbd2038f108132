package zk

import (
	"context"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// Backend is what the ZooKeeper server needs from its controller. The
// controller implements it (roles/controller/zkbackend.go); the server's
// unit tests implement it over one in-memory metadata.State.
//
// A ZooKeeper session is a corral lease: its id is the lease id, its
// timeout the lease TTL, and the SHA-256 of its password the lease's
// SecretHash. Granting one is OpLeaseGrant, closing one OpLeaseRevoke;
// applying a revoke (by close or by the leader's expiry) deletes the
// session's ephemeral znodes at one log position on every controller.
type Backend interface {
	// State is this controller's applied state. Reads from it may lag the
	// leader (ZooKeeper's own guarantee); LinearizableRead closes the gap.
	State() *metadata.State
	// AppliedIndex is this controller's applied raft index: the zxid of
	// every reply header (it never decreases).
	AppliedIndex() uint64
	// WaitApplied returns once the applied index reaches idx, or ctx ends.
	WaitApplied(ctx context.Context, idx uint64) error
	// Propose proposes a command and returns its result once this
	// controller applied it, so the proposer's next read sees it.
	Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error)
	// LinearizableRead returns once the applied state holds every write
	// committed before the call (ZooKeeper's sync, and more).
	LinearizableRead(ctx context.Context) error
	// KeepAlive refreshes leases at the leader (forwarded there from a
	// follower). missing are the ids that no longer exist or whose
	// deadline passed: those sessions expired.
	KeepAlive(ctx context.Context, ids []int64) (missing []int64, err error)
	// IsLeader reports whether this controller leads now; the container
	// and TTL reaper acts only there.
	IsLeader() bool
	// Now is the clock (injected for tests).
	Now() time.Time
}
