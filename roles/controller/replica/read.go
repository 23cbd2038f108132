package replica

import (
	"bytes"
	"context"
	"crypto/rand"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
)

// readLoop batches linearizable reads: all reads waiting when a round
// starts share one ReadIndex request (etcd's read.go pattern). A round ends
// when the leader confirms the index and this node applied up to it.
type readLoop struct {
	c       *Replica
	mu      sync.Mutex
	pending *readBatch
	wake    chan struct{}
	states  chan raft.ReadState
	leader  chan struct{}
}

type readBatch struct {
	done chan struct{}
	err  error
}

func newReadLoop(c *Replica) *readLoop {
	return &readLoop{
		c:      c,
		wake:   make(chan struct{}, 1),
		states: make(chan raft.ReadState, 64),
		leader: make(chan struct{}, 1),
	}
}

// deliver is called from the raft loop; it must not block.
func (r *readLoop) deliver(rs raft.ReadState) {
	select {
	case r.states <- rs:
	default:
	}
}

func (r *readLoop) leaderChanged() {
	select {
	case r.leader <- struct{}{}:
	default:
	}
}

// linearizableRead returns once the local state reflects every write
// committed before the call.
func (c *Replica) LinearizableRead(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	if err := c.waitLeader(ctx); err != nil {
		return err
	}
	r := c.reads
	r.mu.Lock()
	if r.pending == nil {
		r.pending = &readBatch{done: make(chan struct{})}
	}
	b := r.pending
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ErrTimeout
	case <-c.stopc:
		return ErrStopped
	}
}

func (r *readLoop) run() {
	for {
		select {
		case <-r.wake:
		case <-r.c.stopc:
			return
		}
		r.mu.Lock()
		b := r.pending
		r.pending = nil
		r.mu.Unlock()
		if b == nil {
			continue
		}
		b.err = r.round()
		close(b.done)
	}
}

// round issues ReadIndex requests until one is answered, retrying with a
// fresh id every half second because requests can be lost without notice.
func (r *readLoop) round() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.c.cfg.RequestTimeout)
	defer cancel()
	var ids [][]byte
	for {
		id := make([]byte, 8)
		_, _ = rand.Read(id)
		ids = append(ids, id)
		if err := r.c.node.ReadIndex(ctx, id); err != nil {
			return ErrTimeout
		}
		retry := time.NewTimer(500 * time.Millisecond)
		index, ok, err := r.await(ctx, ids, retry.C)
		retry.Stop()
		if err != nil {
			return err
		}
		if ok {
			return r.c.applied.wait(ctx, index)
		}
	}
}

func (r *readLoop) await(ctx context.Context, ids [][]byte, retry <-chan time.Time) (uint64, bool, error) {
	for {
		select {
		case rs := <-r.states:
			for _, id := range ids {
				if bytes.Equal(rs.RequestCtx, id) {
					return rs.Index, true, nil
				}
			}
		case <-retry:
			return 0, false, nil
		case <-r.leader:
			// The new leader never saw our request; ask it again at once.
			return 0, false, nil
		case <-ctx.Done():
			return 0, false, ErrTimeout
		case <-r.c.stopc:
			return 0, false, ErrStopped
		}
	}
}
