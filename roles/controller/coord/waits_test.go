package coord

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// applyReplica applies proposals to a real state in order and records
// whether each came fenced with an ACL revision.
type applyReplica struct {
	mu      sync.Mutex
	st      *metadata.State
	index   uint64
	changed chan struct{}
	fenced  []bool
}

func newApplyReplica() *applyReplica {
	return &applyReplica{st: metadata.New(), changed: make(chan struct{})}
}

func (r *applyReplica) State() *metadata.State                 { return r.st }
func (r *applyReplica) LinearizableRead(context.Context) error { return nil }
func (r *applyReplica) Stopping() <-chan struct{}              { return nil }

func (r *applyReplica) Applied() (uint64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index, r.changed
}

func (r *applyReplica) Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, fenced := metadata.ACLFence(ctx)
	r.fenced = append(r.fenced, fenced)
	r.index++
	_, res := r.st.Apply(r.index, cmd.Marshal())
	close(r.changed)
	r.changed = make(chan struct{})
	return res, res.Err
}

// A lock wait that gives up commits its waiting-only release unfenced,
// even when the request that waited was fenced with its caller's ACL
// revision: refused after an ACL change, the release would leave the
// lease queued, to be granted the lock its client was told it did not
// get.
func TestAwaitLockGivesUpUnfenced(t *testing.T) {
	r := newApplyReplica()
	ctx := metadata.WithACLFence(context.Background(), 0)
	grant, err := metadata.NewWorkerCommand(metadata.OpLeaseGrant, metadata.LeaseGrantPayload{TTLMS: 60_000})
	require.NoError(t, err)
	for range 2 {
		_, err := r.Propose(ctx, grant)
		require.NoError(t, err)
	}
	const key = "_corral/locks/l"
	for _, lease := range []int64{1, 2} {
		cmd, err := metadata.NewCoordCommand(metadata.OpLockAcquire, key, metadata.LockPayload{Lease: lease})
		require.NoError(t, err)
		_, err = r.Propose(ctx, cmd)
		require.NoError(t, err)
	}
	st, err := AwaitLock(ctx, r, key, 2, time.Millisecond, time.Second)
	require.NoError(t, err)
	require.False(t, st.Held)
	require.Equal(t, []bool{true, true, true, true, false}, r.fenced)
	lk, _ := r.st.LockState(key)
	require.Empty(t, lk.Waiters, "the waiter left the queue")
}
