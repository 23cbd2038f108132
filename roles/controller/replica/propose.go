package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// waitRegistry maps a proposal's request id to the caller waiting for it.
// Raft may drop a proposal silently, so every waiter also has a deadline.
type waitRegistry struct {
	mu sync.Mutex
	m  map[uint64]chan metadata.Result
}

func (w *waitRegistry) init() { w.m = map[uint64]chan metadata.Result{} }

func (w *waitRegistry) register(id uint64) chan metadata.Result {
	ch := make(chan metadata.Result, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch
}

func (w *waitRegistry) cancel(id uint64) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// trigger hands res to the waiter of id, if this controller has one.
func (w *waitRegistry) trigger(id uint64, res metadata.Result) bool {
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		ch <- res
	}
	return ok
}

func (w *waitRegistry) failAll(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, ch := range w.m {
		ch <- metadata.Result{Err: err}
		delete(w.m, id)
	}
}

// appliedWaiter lets readers wait until the state machine reached an index.
type appliedWaiter struct {
	mu      sync.Mutex
	index   uint64
	changed chan struct{}
}

func (a *appliedWaiter) init() { a.changed = make(chan struct{}) }

func (a *appliedWaiter) set(i uint64) {
	a.mu.Lock()
	a.index = i
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

func (a *appliedWaiter) get() (uint64, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index, a.changed
}

func (a *appliedWaiter) wait(ctx context.Context, i uint64) error {
	for {
		cur, ch := a.get()
		if cur >= i {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ErrTimeout
		}
	}
}

// waitLeader waits until some leader is known or ctx ends. It wakes when
// the leader changes (leaderKnown), not on a timer: a leader elected a few
// milliseconds after its predecessor's death (leaderdeath.go) should not
// wait out a tick before it gets the writes that queued meanwhile.
func (c *Replica) waitLeader(ctx context.Context) error {
	for {
		changed := c.leaderKnown.get()
		if c.leader.Load() != 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ErrNoLeader
		case <-c.stopc:
			return ErrStopped
		}
	}
}

// broadcast is a channel closed, and replaced, at every event.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// get returns the channel the next event closes.
func (b *broadcast) get() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// fire wakes everyone waiting on get.
func (b *broadcast) fire() {
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}

// Propose replicates cmd and returns its result once this controller has
// applied it. The error is the one thing to check: ErrNoLeader means
// nothing was proposed, ErrTimeout that the outcome is unknown, and an
// entry that committed but was refused by the state machine (a failed
// compare, an invalid command) returns that refusal, with the result.
//
// A ctx carrying an ACL revision (metadata.WithACLFence: the API judged
// the request at it) fences cmd with it: the state machine refuses it if
// the ACLs changed before it applied, and the error wraps
// metadata.ErrACLChanged.
func (c *Replica) Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	cmd, err := metadata.Fence(ctx, cmd)
	if err != nil {
		return metadata.Result{}, err
	}
	res, err := c.propose(ctx, cmd)
	if err == nil {
		err = res.Err
	}
	if errors.Is(err, metadata.ErrACLChanged) {
		c.met.proposalsFailed.WithLabelValues("acl_changed").Inc()
	}
	return res, err
}

// propose is Propose without folding the state machine's refusal into the
// error: for callers that only care whether the entry committed.
func (c *Replica) propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	// A caller's deadline that comes first already bounds the wait: a
	// second timer would cost every write an allocation and a timer heap
	// insert and delete on the leader's busiest path for nothing.
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > c.cfg.RequestTimeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	if err := c.waitLeader(ctx); err != nil {
		c.met.proposalsFailed.WithLabelValues("no_leader").Inc()
		return metadata.Result{}, err
	}
	cmd.ID = c.nextReq.Add(1)
	// The term we know now: if the entry is appended in another one, every
	// replica skips it (metadata.ApplyEntry), so a proposal held up in a
	// deposed leader's inbox cannot commit after its client retried. A
	// term that moved on between this load and raft's step only costs a
	// retry.
	cmd.Term = c.term.Load()
	ch := c.waits.register(cmd.ID)
	defer c.waits.cancel(cmd.ID)
	c.submit(ctx, cmd.ID, cmd.Marshal()) // propose_batch.go: a refusal comes back on ch
	select {
	case res := <-ch:
		if errors.Is(res.Err, ErrNoLeader) || errors.Is(res.Err, ErrStopped) {
			return metadata.Result{}, res.Err // raft did not take it (proposeLoop)
		}
		if errors.Is(res.Err, ErrTimeout) {
			c.met.proposalsFailed.WithLabelValues("timeout").Inc()
			return metadata.Result{}, res.Err
		}
		if errors.Is(res.Err, metadata.ErrTermChanged) {
			c.met.proposalsFailed.WithLabelValues("term_changed").Inc()
			return metadata.Result{}, fmt.Errorf("%w: %w", errNotApplied, res.Err)
		}
		return res, nil
	case <-ctx.Done():
		c.met.proposalsFailed.WithLabelValues("timeout").Inc()
		return metadata.Result{}, ErrTimeout
	case <-c.stopc:
		return metadata.Result{}, ErrStopped
	}
}

// ProposePayload proposes op with payload as its JSON document (see
// Propose for the error).
func (c *Replica) ProposePayload(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error) {
	cmd, err := metadata.NewWorkerCommand(op, payload)
	if err != nil {
		return metadata.Result{}, err
	}
	return c.Propose(ctx, cmd)
}

// ensureClusterID runs on a new leader: the first leader of a cluster fixes
// its id, and every later leader finds it already set.
func (c *Replica) ensureClusterID() {
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.cfg.RequestTimeout)
	defer cancel()
	for ctx.Err() == nil && c.isLeader.Load() {
		// The leader's view is complete only once it applied its own term's
		// first entry, so ask through a linearizable read first.
		if err := c.LinearizableRead(ctx); err != nil {
			continue
		}
		if c.state.Load().ClusterID() != "" {
			return
		}
		id := c.ClusterID()
		if id == "" {
			id = c.cfg.ClusterID
		}
		if id == "" {
			id = newClusterID()
		}
		// Committed is enough: a refusal means the first writer already won.
		if _, err := c.propose(ctx, &metadata.Command{Op: metadata.OpSetClusterID, Value: []byte(id)}); err == nil {
			return
		}
	}
}

// learnClusterID records the replicated cluster id in the data dir the first
// time it is seen. A data dir that already names another cluster is fatal:
// this node must not take part.
func (c *Replica) learnClusterID(id string) {
	if id == "" {
		return
	}
	cur := c.ClusterID()
	if cur == id {
		return
	}
	if cur != "" {
		err := fmt.Errorf("data dir %s belongs to cluster %s but the quorum is cluster %s: refusing to take part; wipe the data dir to join", c.cfg.DataDir, cur, id)
		c.log.Error("cluster id mismatch", "err", err)
		select {
		case c.failed <- err:
		default:
		}
		return
	}
	if err := c.store.SetMeta("cluster_id", id); err != nil {
		c.log.Error("record cluster id", "err", err)
		return
	}
	c.clusterID.Store(id)
	c.log.Info("cluster id fixed", "cluster_id", id)
}
