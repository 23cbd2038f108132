package api

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/backup"
	"github.com/corral-dev/corral/roles/controller/api/view"
	"github.com/corral-dev/corral/roles/controller/coord"
	"github.com/corral-dev/corral/transport"
)

// The fakes below stand in for the controller's parts: the handlers run
// against them with no raft and no network. The replicated state is a real
// metadata.State that applies each proposal at the next index, as the
// controller's apply loop would, so KV, lease and lock answers come from
// the real state machine.

// fakeCluster is a quorum whose leader, indexes and addresses a test sets.
type fakeCluster struct {
	mu      sync.Mutex
	self    uint64
	leader  uint64
	commit  uint64
	applied uint64
	// httpAddrs are members' announced HTTP addresses.
	httpAddrs map[uint64]string
	// err fails membership changes.
	err error
}

func (c *fakeCluster) ClusterID() string { return "test-cluster" }

func (c *fakeCluster) LeaderID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

func (c *fakeCluster) IsLeader() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader != 0 && c.leader == c.self
}

func (c *fakeCluster) Term() uint64 { return 3 }

func (c *fakeCluster) CommitIndex() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commit
}

func (c *fakeCluster) AppliedIndex() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied
}

func (c *fakeCluster) MemberAddress(id uint64) (string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return "", c.httpAddrs[id]
}

func (c *fakeCluster) Members() (voters, learners []uint64) { return []uint64{c.self}, nil }
func (c *fakeCluster) IsVoter() bool                        { return true }

func (c *fakeCluster) Quorum() view.QuorumHealth {
	return view.QuorumHealth{Voters: 1, Reachable: 1, Needed: 1, Healthy: true}
}

func (c *fakeCluster) View() view.ClusterInfo {
	return view.ClusterInfo{ClusterID: c.ClusterID(), NodeID: c.self, LeaderID: c.LeaderID(), Term: c.Term(),
		CommitIndex: c.CommitIndex(), AppliedIndex: c.AppliedIndex(), Voter: true, Quorum: c.Quorum()}
}

func (c *fakeCluster) Controllers() []view.ControllerInfo {
	return []view.ControllerInfo{{ID: c.self, Address: "127.0.0.1:1", Role: "leader", Voter: true, Reachable: true}}
}

func (c *fakeCluster) LeaderChanges(time.Time) []view.LeaderChange { return nil }

func (c *fakeCluster) AddController(context.Context, uint64, string) error { return c.err }

func (c *fakeCluster) RemoveController(context.Context, uint64, bool) error { return c.err }

func (c *fakeCluster) TransferLeader(context.Context, uint64) error { return c.err }

// fakeStore applies proposals to a real metadata.State.
type fakeStore struct {
	mu    sync.Mutex
	state *metadata.State
	index uint64
	// err, when set, fails every proposal and linearizable read before
	// anything is applied (a controller that cannot reach its quorum).
	err error
	// onRead, when set, runs once at the next linearizable read, outside
	// mu: what a lagging follower applies while its read waits.
	onRead func()
	// onPropose, when set, runs once before the next proposal is applied,
	// outside mu: what the log holds before that proposal (an ACL change
	// committed while the request was judged on older state).
	onPropose func()
}

func newFakeStore() *fakeStore { return &fakeStore{state: metadata.New()} }

func (s *fakeStore) State() *metadata.State { return s.state }

func (s *fakeStore) Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	s.mu.Lock()
	hook := s.onPropose
	s.onPropose = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	// As the replica does: a request judged at an ACL revision is fenced.
	cmd, err := metadata.Fence(ctx, cmd)
	if err != nil {
		return metadata.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return metadata.Result{}, s.err
	}
	s.index++
	cmd.ID = s.index
	_, res := s.state.Apply(s.index, cmd.Marshal())
	return res, res.Err // one combined error, like the replica's
}

// ProposePayload proposes like Propose, with v as the JSON payload.
func (s *fakeStore) ProposePayload(ctx context.Context, op metadata.Op, v any) (metadata.Result, error) {
	cmd, err := metadata.NewWorkerCommand(op, v)
	if err != nil {
		return metadata.Result{}, fmt.Errorf("fake store: %w", err)
	}
	return s.Propose(ctx, cmd)
}

func (s *fakeStore) LinearizableRead(context.Context) error {
	s.mu.Lock()
	err, hook := s.err, s.onRead
	s.onRead = nil
	s.mu.Unlock()
	if err == nil && hook != nil {
		hook()
	}
	return err
}

// beforePropose makes the next proposal apply after what fn does.
func (s *fakeStore) beforePropose(fn func()) {
	s.mu.Lock()
	s.onPropose = fn
	s.mu.Unlock()
}

// catchUpOnRead makes the next linearizable read apply what fn does first.
func (s *fakeStore) catchUpOnRead(fn func()) {
	s.mu.Lock()
	s.onRead = fn
	s.mu.Unlock()
}

// fakeWorkers answers with a fixed worker list and log.
type fakeWorkers struct {
	list view.WorkerList
	log  transport.LogData
}

func (w *fakeWorkers) Workers(time.Time) view.WorkerList {
	// A copy: handlers filter the slice in place.
	out := w.list
	out.Workers = append([]view.WorkerInfo(nil), w.list.Workers...)
	return out
}

func (w *fakeWorkers) WorkerCounts(time.Time) map[string]int {
	counts := map[string]int{}
	for _, wk := range w.list.Workers {
		counts[wk.State]++
	}
	return counts
}

func (w *fakeWorkers) FetchLog(context.Context, string, transport.LogRequest) (*transport.LogData, error) {
	d := w.log
	return &d, nil
}

// fakeCoord keeps alive the leases in alive.
type fakeCoord struct {
	alive map[int64]int64 // id -> TTL in ms
	err   error
}

func (c *fakeCoord) KeepAlive(_ context.Context, ids []int64) ([]coord.LeaseTTL, []int64, error) {
	if c.err != nil {
		return nil, nil, c.err
	}
	var alive []coord.LeaseTTL
	var missing []int64
	for _, id := range ids {
		if ttl, ok := c.alive[id]; ok {
			alive = append(alive, coord.LeaseTTL{ID: id, TTLMS: ttl})
		} else {
			missing = append(missing, id)
		}
	}
	return alive, missing, nil
}

func (c *fakeCoord) LeaseRemaining(int64, time.Duration) (time.Duration, bool) { return 0, false }

func (c *fakeCoord) AwaitLock(context.Context, string, int64, time.Duration) (metadata.LockStatus, error) {
	return metadata.LockStatus{}, nil
}

// fakeWatches hands out one prepared watch, or refuses with err.
type fakeWatches struct {
	watch   *fakeWatch
	backlog []metadata.Event
	last    int64
	err     error
}

func (h *fakeWatches) Subscribe(string, int64) (Watch, []metadata.Event, int64, error) {
	if h.err != nil {
		return nil, nil, 0, h.err
	}
	return h.watch, h.backlog, h.last, nil
}

func (h *fakeWatches) Unsubscribe(Watch) {}
func (h *fakeWatches) Current() int64    { return h.last }
func (h *fakeWatches) Watchers() int     { return 0 }
func (h *fakeWatches) Closed() bool      { return false }

// fakeWatch is a watch whose events and cut a test drives: queued are
// handed out by the first Take.
type fakeWatch struct {
	mu     sync.Mutex
	queued []metadata.Event
	ready  chan struct{}
	cut    chan struct{}
	err    error
}

func (w *fakeWatch) Ready() <-chan struct{} { return w.ready }
func (w *fakeWatch) Take(dst []metadata.Event) []metadata.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	dst = append(dst, w.queued...)
	w.queued = nil
	return dst
}
func (w *fakeWatch) Cut() <-chan struct{} { return w.cut }
func (w *fakeWatch) Err() error           { return w.err }

// fakeBackups returns a fixed snapshot, or err.
type fakeBackups struct {
	header backup.Header
	data   []byte
	err    error
}

func (b *fakeBackups) SnapshotForBackup(context.Context) (backup.Header, []byte, error) {
	return b.header, b.data, b.err
}
