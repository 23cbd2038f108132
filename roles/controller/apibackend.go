package controller

import (
	"context"
	"errors"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/backup"
	"github.com/corral-dev/corral/roles/controller/api"
	"github.com/corral-dev/corral/roles/controller/api/view"
	"github.com/corral-dev/corral/roles/controller/coord"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/transport"
)

// apiBackend hands the HTTP API the parts it declares it needs
// (api.Backend). The adapters are small on purpose: each answers from one
// part of the controller, under that part's own locks.
func (c *Controller) apiBackend() api.Backend {
	return api.Backend{
		Cluster:      apiCluster{c},
		Store:        apiStore{c},
		Workers:      apiWorkers{c},
		Coordination: apiCoord{c},
		Watches:      apiWatches{c},
		Backups:      apiBackups{c},
	}
}

// apiCluster is the quorum's view for the API.
type apiCluster struct{ c *Controller }

func (a apiCluster) ClusterID() string      { return a.c.ClusterID() }
func (a apiCluster) LeaderID() uint64       { return a.c.LeaderID() }
func (a apiCluster) IsLeader() bool         { return a.c.r.IsLeader() }
func (a apiCluster) Term() uint64           { return a.c.Term() }
func (a apiCluster) CommitIndex() uint64    { return a.c.r.CommitIndex() }
func (a apiCluster) IsVoter() bool          { return a.c.isVoter() }
func (a apiCluster) View() view.ClusterInfo { return a.c.clusterView() }

func (a apiCluster) AppliedIndex() uint64 {
	applied, _ := a.c.r.Applied()
	return applied
}

func (a apiCluster) MemberAddress(id uint64) (string, string) { return a.c.r.MemberAddress(id) }

func (a apiCluster) Members() (voters, learners []uint64) {
	v, l := a.c.r.Members()
	return sortedIDs(v), sortedIDs(l)
}

func (a apiCluster) Quorum() view.QuorumHealth          { return view.QuorumHealth(a.c.r.Quorum()) }
func (a apiCluster) Controllers() []view.ControllerInfo { return a.c.controllerList() }

func (a apiCluster) LeaderChanges(now time.Time) []view.LeaderChange {
	var out []view.LeaderChange
	for _, ch := range a.c.r.LeaderChanges(now) {
		out = append(out, view.LeaderChange(ch))
	}
	return out
}

func (a apiCluster) AddController(ctx context.Context, id uint64, addr string) error {
	return a.c.AddController(ctx, id, addr)
}

func (a apiCluster) RemoveController(ctx context.Context, id uint64, force bool) error {
	return a.c.RemoveController(ctx, id, force)
}

func (a apiCluster) TransferLeader(ctx context.Context, id uint64) error {
	return a.c.TransferLeader(ctx, id)
}

// apiStore is the replicated state for the API.
type apiStore struct{ c *Controller }

func (a apiStore) State() *metadata.State { return a.c.State() }

func (a apiStore) Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	return a.c.Propose(ctx, cmd)
}

func (a apiStore) ProposePayload(ctx context.Context, op metadata.Op, v any) (metadata.Result, error) {
	return a.c.r.ProposePayload(ctx, op, v)
}

func (a apiStore) LinearizableRead(ctx context.Context) error { return a.c.r.LinearizableRead(ctx) }

// apiWorkers is the leader's view of worker sessions for the API.
type apiWorkers struct{ c *Controller }

func (a apiWorkers) Workers(now time.Time) view.WorkerList     { return a.c.workerView(now) }
func (a apiWorkers) WorkerCounts(now time.Time) map[string]int { return a.c.WorkerCounts(now) }

func (a apiWorkers) FetchLog(ctx context.Context, worker string, req transport.LogRequest) (*transport.LogData, error) {
	return a.c.workers.FetchLog(ctx, worker, req)
}

// apiCoord is what leases and locks need beyond proposals.
type apiCoord struct{ c *Controller }

func (a apiCoord) KeepAlive(ctx context.Context, ids []int64) ([]coord.LeaseTTL, []int64, error) {
	alive, missing, err := coord.KeepAlive(ctx, a.c.r, a.c.lessor, ids)
	if errors.Is(err, coord.ErrNotPrimary) {
		return nil, nil, errNotLeader
	}
	return alive, missing, err
}

func (a apiCoord) LeaseRemaining(id int64, ttl time.Duration) (time.Duration, bool) {
	return a.c.lessor.Remaining(id, ttl)
}

func (a apiCoord) AwaitLock(ctx context.Context, key string, lease int64, wait time.Duration) (metadata.LockStatus, error) {
	return coord.AwaitLock(ctx, a.c.r, key, lease, wait, a.c.cfg.RequestTimeout)
}

// apiWatches is the watch hub for the API.
type apiWatches struct{ c *Controller }

func (a apiWatches) Subscribe(prefix string, from int64) (api.Watch, []metadata.Event, int64, error) {
	w, backlog, last, err := a.c.subscribeWatch(prefix, from)
	if err != nil {
		return nil, nil, 0, watchErr(err)
	}
	return apiWatch{w}, backlog, last, nil
}

func (a apiWatches) Unsubscribe(w api.Watch) {
	if aw, ok := w.(apiWatch); ok {
		a.c.hub.Unsubscribe(aw.w)
	}
}

func (a apiWatches) Current() int64 { return a.c.hub.Current() }
func (a apiWatches) Watchers() int  { return a.c.hub.Watchers() }
func (a apiWatches) Closed() bool   { return a.c.hub.Closed() }

// apiWatch is one open watch.
type apiWatch struct{ w *coord.Watcher }

func (a apiWatch) Ready() <-chan struct{} { return a.w.Ready() }
func (a apiWatch) Take(dst []metadata.Event) []metadata.Event {
	return a.w.Take(dst)
}
func (a apiWatch) Cut() <-chan struct{} { return a.w.Cut() }
func (a apiWatch) Err() error           { return watchErr(a.w.Err()) }

// watchErr turns the hub's resume errors into the API's.
func watchErr(err error) error {
	var we *coord.WatchError
	if errors.Is(err, coord.ErrTooManyWatches) {
		return fault.New(fault.Limit, "too_many_watches", "%v", err)
	}
	if errors.As(err, &we) {
		return &api.WatchError{Code: we.Code, Message: we.Message, Resume: we.Resume, Oldest: we.Oldest}
	}
	return err
}

// apiBackups takes consistent snapshots for the API.
type apiBackups struct{ c *Controller }

func (a apiBackups) SnapshotForBackup(ctx context.Context) (backup.Header, []byte, error) {
	return a.c.snapshotForBackup(ctx)
}
