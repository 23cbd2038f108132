package api

import (
	"context"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/backup"
	"github.com/corral-dev/corral/roles/controller/api/view"
	"github.com/corral-dev/corral/roles/controller/coord"
	"github.com/corral-dev/corral/transport"
)

// The API needs the controller's parts only through these small
// interfaces, which it declares itself (rqlite's http.Store, etcd's
// RaftKV): handler tests run against fakes, with no raft and no network.

// Cluster is the quorum as this controller sees it, and the membership
// changes the leader makes.
type Cluster interface {
	ClusterID() string
	LeaderID() uint64
	IsLeader() bool
	Term() uint64
	// CommitIndex and AppliedIndex are this controller's.
	CommitIndex() uint64
	AppliedIndex() uint64
	// MemberAddress returns a member's cluster and HTTP addresses ("" when
	// unknown).
	MemberAddress(id uint64) (cluster, httpAddr string)
	// Members returns the voters and the learners of the configuration.
	Members() (voters, learners []uint64)
	IsVoter() bool
	Quorum() view.QuorumHealth
	// View describes the quorum; only the leader knows followers' match
	// indexes.
	View() view.ClusterInfo
	// Controllers is the leader's replication view.
	Controllers() []view.ControllerInfo
	LeaderChanges(now time.Time) []view.LeaderChange
	AddController(ctx context.Context, id uint64, addr string) error
	RemoveController(ctx context.Context, id uint64, force bool) error
	TransferLeader(ctx context.Context, id uint64) error
}

// Store is the replicated state: proposals and reads.
type Store interface {
	// State is the local state machine, to read (serializable unless a
	// LinearizableRead came first).
	State() *metadata.State
	// Propose replicates cmd and returns its result once applied here. The
	// error is the one thing to check: no leader, an unknown outcome, or
	// the state machine's refusal of a committed entry (with the result).
	Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error)
	// ProposePayload proposes op with v as its JSON payload, like Propose.
	ProposePayload(ctx context.Context, op metadata.Op, v any) (metadata.Result, error)
	// LinearizableRead returns once the local state holds every write
	// committed before the call.
	LinearizableRead(ctx context.Context) error
}

// Workers is the leader's view of worker sessions.
type Workers interface {
	// Workers merges the replicated workers with the leader's liveness.
	Workers(now time.Time) view.WorkerList
	// WorkerCounts counts workers per state (view.WorkerStates).
	WorkerCounts(now time.Time) map[string]int
	// FetchLog asks a worker for a piece of an allocation's log.
	FetchLog(ctx context.Context, worker string, req transport.LogRequest) (*transport.LogData, error)
}

// Coordination is what leases and locks need beyond proposals.
type Coordination interface {
	// KeepAlive refreshes leases on the leader; missing are the ids that
	// are gone (or expiring).
	KeepAlive(ctx context.Context, ids []int64) (alive []coord.LeaseTTL, missing []int64, err error)
	// LeaseRemaining is the time a lease has left, when the leader knows.
	LeaseRemaining(id int64, ttl time.Duration) (time.Duration, bool)
	// AwaitLock waits up to wait for key to be granted to lease, then
	// gives up (committing a waiting-only release).
	AwaitLock(ctx context.Context, key string, lease int64, wait time.Duration) (metadata.LockStatus, error)
}

// Watches is the watch hub: recent events and their fan-out.
type Watches interface {
	// Subscribe starts a watch of keys under prefix from revision from
	// (0: after the current one) and returns the events already past it
	// and the newest revision. It fails with a *WatchError when from is
	// older than the history kept.
	Subscribe(prefix string, from int64) (Watch, []metadata.Event, int64, error)
	Unsubscribe(Watch)
	// Current is the newest revision published.
	Current() int64
	// Watchers counts open watches.
	Watchers() int
	// Closed reports whether the hub was closed (the controller is stopping).
	Closed() bool
}

// Watch is one open watch.
type Watch interface {
	// Ready receives a value when events may be queued for Take.
	Ready() <-chan struct{}
	// Take appends the queued events (revision order) to dst and empties
	// the queue; the watch's buffer grows on demand, nothing is reserved.
	Take(dst []metadata.Event) []metadata.Event
	// Cut is closed when the watch is dropped; Err then says why.
	Cut() <-chan struct{}
	Err() error
}

// WatchError ends or refuses a watch: Resume is the revision to resume
// from and Oldest the oldest revision still available.
type WatchError struct {
	Code    string
	Message string
	Resume  int64
	Oldest  int64
}

// Error implements error.
func (e *WatchError) Error() string { return e.Message }

// Backups takes consistent snapshots for GET /v1/snapshot.
type Backups interface {
	SnapshotForBackup(ctx context.Context) (backup.Header, []byte, error)
}

// Backend is every part the API serves.
type Backend struct {
	Cluster      Cluster
	Store        Store
	Workers      Workers
	Coordination Coordination
	Watches      Watches
	Backups      Backups
}
