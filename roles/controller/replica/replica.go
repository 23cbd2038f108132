// Package replica is the raft member of a controller: the Ready loop
// (persist, send, apply, snapshot), proposals and their waits, linearizable
// reads (ReadIndex), forwarding of followers' proposals, membership changes
// and joining. It owns the raft node, the Pebble log and the state machine;
// everything else in the controller sees raft only through it, and it
// tells the rest of the controller what happened through Hooks.
package replica

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/raftlog"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/transport"
)

// Config is the raft member's part of a controller's configuration (see
// controller.Config for each field's meaning and default).
type Config struct {
	NodeID      uint64
	DataDir     string
	ClusterAddr string
	ClusterID   string
	Peers       map[uint64]string
	Join        []string
	// Token is the API token used to call Join endpoints.
	Token           string
	TLSDir          string
	Transport       transport.Transport
	NoSync          bool
	TickInterval    time.Duration
	ElectionTicks   int
	HeartbeatTicks  int
	RequestTimeout  time.Duration
	SnapshotEvery   uint64
	SnapshotCatchUp uint64
	// PromoteAfter overrides how long a learner must stay caught up
	// before it is promoted (0: the PromoteAfter default).
	PromoteAfter time.Duration
	Logger       *slog.Logger
	// Registry receives the raft metrics and the transport's.
	Registry *prometheus.Registry
	Hooks    Hooks
}

// Hooks tell the rest of the controller what the replica did. They must
// not block. LeadershipChanged runs on the raft loop, BeforePersist on the
// append loop, the others on the apply loop (storage_loops.go), each in the
// order raft produced the events.
type Hooks struct {
	// Applied receives the watch events of each applied entry.
	Applied func(events []metadata.Event)
	// ZNodesApplied receives the znode changes of each applied entry that
	// made some (the ZooKeeper server's watches); it must not block.
	ZNodesApplied func(events []metadata.ZNodeEvent)
	// SnapshotInstalled runs after a snapshot from the leader replaced the
	// state machine.
	SnapshotInstalled func(st *metadata.State)
	// JobsChanged runs after a batch of entries that changed jobs,
	// allocations or workers was applied.
	JobsChanged func()
	// LeadershipChanged runs when this member gains or loses leadership
	// (term is the new term): the controller's one establish/revoke list.
	LeadershipChanged func(isLeader bool, term uint64)
	// BeforeApply, when set, runs before every batch of committed entries
	// is applied (tests block it to stand for a slow apply path).
	BeforeApply func()
	// BeforePersist, when set, runs on the append loop before a write of
	// new entries, with the last of them. Tests block it to see
	// what a controller answers while its disk has not synced yet.
	BeforePersist func(lastEntry uint64)
	// SnapshotWriting, when set, runs in the snapshot goroutine before it
	// encodes a cut (tests block it to show the loop goes on meanwhile).
	SnapshotWriting func()
}

// Replica is one member of the metadata quorum. One goroutine (run) owns
// the raft node, with an append loop and an apply loop beside it
// (storage_loops.go); everything else talks to it through proposals,
// ReadIndex requests and atomically published state.
type Replica struct {
	cfg   Config
	log   *slog.Logger
	store *raftlog.Store
	node  raft.Node
	tr    transport.Transport
	tls   *transport.TLSBundle // nil with an injected Transport
	reg   *prometheus.Registry
	met   *controllerMetrics
	// beats measures a leader's rounds of heartbeats; the raft loop's own
	// (tickdelay.go).
	beats beatWatch

	state     atomic.Pointer[metadata.State] // replaced when a snapshot is installed
	clusterID atomic.Value                   // string; "" until known
	leader    atomic.Uint64
	term      atomic.Uint64
	commit    atomic.Uint64
	isLeader  atomic.Bool
	raftState atomic.Uint32 // raft.StateType of the latest SoftState
	death     deathElection // after the leader's process ended (leaderdeath.go)
	// leaderKnown fires at every leader change (waitLeader).
	leaderKnown broadcast

	applied appliedWaiter
	waits   waitRegistry
	reads   *readLoop
	nextReq atomic.Uint64

	memberMu  sync.Mutex // one membership change at a time
	heard     heardTracker
	readyLast atomic.Uint64 // last index raft handed out in a Ready (validate.go)
	drops     dropLog
	confMu    sync.RWMutex
	confState *pb.ConfState
	// The apply loop (storage_loops.go) owns the snapshot bookkeeping.
	snapIndex uint64 // index of the latest local snapshot
	// snapWaits is set while a due snapshot waits for the local log to
	// reach the applied index (raft may hand out committed entries before
	// they are written here, storage_loops.go); the append loop then
	// nudges the apply loop through logMoved.
	snapWaits atomic.Bool
	logMoved  chan struct{}
	snapBusy  bool // a snapshot is being written (snapshot.go)
	// snapForced makes the next maybeSnapshot take one whether due or
	// not, for stopSnapWaiter (stopsnapshot.go); both are the apply loop's.
	snapForced     bool
	stopSnapWaiter chan error
	stopSnapReq    chan chan error
	snapBytes      uint64 // size of the latest snapshot
	logBytes       uint64 // entry data applied since the latest snapshot began
	// snapJitter is this member's random delay before its next snapshot
	// (snapshot.go).
	snapJitter uint64
	snapDone   chan snapResult
	snapWG     sync.WaitGroup
	joining    bool // empty data dir joining a running cluster via --join

	leaders  leaderHistory         // leader changes of the last hour (dashboard)
	fwdProps chan *pb.Message      // proposals forwarded by followers (forward.go)
	props    *fifo[queuedProposal] // proposals waiting for proposeLoop (propose_batch.go)
	batcher  batchProposer         // c.node, with our raft copy's ProposeBatch
	campaign campaigner            // c.node, with our raft copy's CampaignUnlessCandidate

	appendQ *fifo[*pb.Message] // raft loop -> append loop (storage_loops.go)
	applyQ  *fifo[applyItem]   // raft and append loops -> apply loop

	stopc    chan struct{}
	halt     chan struct{} // closed to end the raft, append and apply loops
	haltOnce sync.Once
	ctx      context.Context // cancelled with halt: local steps into raft
	cancel   context.CancelFunc
	done     chan struct{}
	failed   chan error
	stopOnce sync.Once
	closeMu  sync.Once
}

// Open opens the data dir's raft log, checks it belongs to this node and
// cluster, starts the transport and raft, and joins a running cluster when
// the data dir is new and Join is set. Nothing runs until Start.
func Open(cfg Config) (*Replica, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	c := &Replica{
		cfg:      cfg,
		log:      cfg.Logger,
		reg:      cfg.Registry,
		stopc:    make(chan struct{}),
		halt:     make(chan struct{}),
		appendQ:  newFIFO[*pb.Message](),
		applyQ:   newFIFO[applyItem](),
		props:    newFIFO[queuedProposal](),
		done:     make(chan struct{}),
		failed:   make(chan error, 1),
		snapDone: make(chan snapResult, 1),
		logMoved: make(chan struct{}, 1),
		fwdProps: make(chan *pb.Message, forwardedProposalQueue),
		death:    deathElection{kick: make(chan struct{}, 1)},
		// the apply loop takes a stop's snapshot request (stopsnapshot.go)
		stopSnapReq: make(chan chan error),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.clusterID.Store("")
	c.snapJitter = newSnapJitter(cfg.SnapshotEvery) // members apart from the first snapshot on
	c.met = newControllerMetrics(c.reg)
	c.beats = beatWatch{stallWatch: newStallWatch(c.met.heartbeatGap, c.log, msgBeatLate, cfg.TickInterval, cfg.ElectionTicks)}
	c.waits.init()
	c.heard.init()
	c.applied.init()
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	c.nextReq.Store(binary.BigEndian.Uint64(seed[:]))
	if err := c.openStore(); err != nil {
		return nil, err
	}
	if err := c.startTransport(); err != nil {
		c.store.Close()
		return nil, err
	}
	if err := c.maybeJoin(); err != nil {
		c.tr.Close()
		c.store.Close()
		return nil, err
	}
	if err := c.startRaft(); err != nil {
		c.tr.Close()
		c.store.Close()
		return nil, err
	}
	bp, ok1 := c.node.(batchProposer)
	cp, ok2 := c.node.(campaigner)
	if !ok1 || !ok2 { // a build without third_party/raft (go.mod's replace)
		c.node.Stop()
		c.tr.Close()
		c.store.Close()
		return nil, errors.New("raft node has no ProposeBatch or CampaignUnlessCandidate: corral must be built with its copy of raft (third_party/raft)")
	}
	c.batcher, c.campaign = bp, cp
	c.revocationsChanged() // connections accepted before the deny-list was loaded
	// Inbound messages reach raft, so the transport starts only now.
	if err := c.tr.Start(c); err != nil {
		c.node.Stop()
		c.tr.Close()
		c.store.Close()
		return nil, fmt.Errorf("start controller transport: %w", err)
	}
	c.reads = newReadLoop(c)
	return c, nil
}

// Start runs the raft loop and its helpers (forwarding, reads, learner
// promotion). The hooks must be ready: they run from now on.
func (c *Replica) Start() {
	c.advanceElection()
	go c.run()
	go c.electAtBoot()
	go c.proposeLoop(c.batcher)
	go c.forwardLoop()
	go c.reads.run()
	go c.promoteLoop()
}

// advanceElection fast-forwards a starting member's election clock to two
// ticks short of the election timeout, as etcd does on boot
// (--initial-election-tick-advance). A whole cluster restarting then
// elects a leader about one election timeout sooner (a restart of 1,000,000
// keys: 3.0-3.3 s to the first write before). Two ticks are left for a
// running leader's heartbeat to arrive; if this member campaigns anyway,
// PreVote and CheckQuorum make the others refuse while their leader is
// alive, so nothing is disrupted. The ticks are queued before the loop runs
// and delivered by raft's own goroutine.
func (c *Replica) advanceElection() {
	for range min(c.cfg.ElectionTicks-2, 100) { // raft queues 128 ticks
		c.node.Tick()
	}
}

// Abort undoes Open when the controller could not start around it.
func (c *Replica) Abort() {
	c.cancel()
	c.node.Stop()
	_ = c.tr.Close()
	_ = c.store.Close()
}

// Stop ends the raft, append and apply loops: no hook runs after it
// returns. Proposals and reads in flight fail with ErrStopped.
func (c *Replica) Stop() {
	c.stopOnce.Do(func() {
		// The loops first: whoever sees Stopping closed knows that no
		// write still held up will be made (the append loop checks halt
		// before each), which is what a test of a crash needs.
		c.haltLoops()
		close(c.stopc)
		<-c.done
	})
}

// Close stops the raft loop if Stop has not, then raft and the transport,
// and closes the log. The controller stops what uses the replica between
// Stop and Close.
func (c *Replica) Close() {
	c.Stop()
	c.closeMu.Do(func() {
		c.node.Stop()
		_ = c.tr.Close()
		_ = c.store.Close()
	})
}

// Stopping is closed when Stop begins.
func (c *Replica) Stopping() <-chan struct{} { return c.stopc }

// Failed delivers an error when the raft loop stopped on its own (a
// storage failure or a data dir of another cluster).
func (c *Replica) Failed() <-chan error { return c.failed }

// openStore opens the raft log and checks the data dir belongs to this node
// and, when known, to the requested cluster.
func (c *Replica) openStore() error {
	dir := filepath.Join(c.cfg.DataDir, "raft")
	st, err := raftlog.Open(raftlog.Options{
		Dir: dir, NoSync: c.cfg.NoSync, Logger: c.log,
		OnSync: func(d time.Duration) { c.met.syncDuration.Observe(d.Seconds()) },
	})
	if errors.Is(err, raftlog.ErrLocked) {
		return fmt.Errorf("data dir %s: %w%s; stop that process first, or give this node another --data-dir",
			c.cfg.DataDir, raftlog.ErrLocked, pidHolding(c.cfg.DataDir))
	}
	if err != nil {
		return err // raftlog's error names the directory and the remedy
	}
	c.store = st
	writePIDFile(c.cfg.DataDir, c.log)
	if err := c.checkIdentity(); err != nil {
		st.Close()
		return err
	}
	return nil
}

func (c *Replica) checkIdentity() error {
	want := strconv.FormatUint(c.cfg.NodeID, 10)
	got, ok, err := c.store.GetMeta("node_id")
	if err != nil {
		return fmt.Errorf("read node id from data dir: %w", err)
	}
	if ok && got != want {
		return fmt.Errorf("data dir %s belongs to node %s, not node %s: start with --node-id=%s or use an empty data dir",
			c.cfg.DataDir, got, want, got)
	}
	if !ok {
		if err := c.store.SetMeta("node_id", want); err != nil {
			return fmt.Errorf("record node id in data dir: %w", err)
		}
	}
	cid, ok, err := c.store.GetMeta("cluster_id")
	if err != nil {
		return fmt.Errorf("read cluster id from data dir: %w", err)
	}
	if ok {
		if c.cfg.ClusterID != "" && c.cfg.ClusterID != cid {
			return fmt.Errorf("data dir %s belongs to cluster %s, not %s: use an empty data dir to join cluster %s",
				c.cfg.DataDir, cid, c.cfg.ClusterID, c.cfg.ClusterID)
		}
		c.clusterID.Store(cid)
	}
	return nil
}

func (c *Replica) startTransport() error {
	if c.cfg.Transport != nil {
		c.tr = c.cfg.Transport
	} else {
		bundle, err := transport.LoadTLSDir(c.cfg.TLSDir)
		if err != nil {
			return fmt.Errorf("load TLS files: %w", err)
		}
		// Peers accept this node's raft messages only from the node id its
		// certificate names: catch a swapped TLS dir here, not as refusals.
		if got := bundle.Self.NodeID(); got != c.cfg.NodeID {
			return fmt.Errorf("the TLS certificate in %s is for %s, not controller %d: issue one with 'corral certs issue --role controller --id %d'",
				c.cfg.TLSDir, bundle.Self, c.cfg.NodeID, c.cfg.NodeID)
		}
		bundle.Denied = c.deniedCert // the replicated deny-list (revocation.go)
		if err := transport.RegisterCertExpiry(c.reg, "node", bundle.Leaf); err != nil {
			return err
		}
		q, err := transport.NewQUIC(transport.QUICConfig{
			NodeID: c.cfg.NodeID, ListenAddr: c.cfg.ClusterAddr, TLS: bundle,
			ClusterID: c.ClusterID, Logger: c.log, Registerer: c.reg,
		})
		if err != nil {
			return fmt.Errorf("listen for controllers on %s: %w", c.cfg.ClusterAddr, err)
		}
		c.tr, c.tls = q, bundle
	}
	for id, addr := range c.cfg.Peers {
		if id != c.cfg.NodeID {
			c.tr.AddPeer(id, addr)
		}
	}
	return nil
}

// raftApplied is the applied index raft restarts from: the restored
// state's, but never past the synced HardState's commit index, which raft
// refuses (it panics). The two can differ: with AsyncStorageWrites the
// apply loop applies an entry as soon as raft knows it committed, while
// the HardState carrying that commit index is still on its way to disk
// in the append loop, and a snapshot of the state can be written (at
// every stop, for one) before it arrives. A controller stopped in that
// window then panicked at every start. Raft hands the entries between
// the two out again once it learns the commit index from the leader;
// they are the committed ones the state already holds, and apply skips
// entries at or below its applied index.
func raftApplied(stateApplied, syncedCommit uint64) uint64 {
	return min(stateApplied, syncedCommit)
}

func (c *Replica) startRaft() error {
	hs, cs, err := c.store.InitialState()
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	// The persisted term, not 0, until a Ready brings a new HardState:
	// raft sends none while the term and commit stay put, and validate.go
	// checks a leader's MsgTimeoutNow against this term (a restarted
	// follower dropped its leadership transfer as "not_from_leader").
	c.term.Store(hs.GetTerm())
	c.commit.Store(hs.GetCommit())
	snap, err := c.store.Snapshot()
	if err != nil {
		return fmt.Errorf("read raft snapshot: %w", err)
	}
	st := metadata.New()
	if !raft.IsEmptySnap(snap) {
		// No copy: the store hands out the file it verified at Open,
		// mapped read-only for good (raftlog.Store.Snapshot).
		if st, err = metadata.RestoreNoCopy(snap.GetData()); err != nil {
			return fmt.Errorf("restore state machine from snapshot at index %d: %w", snap.GetMetadata().GetIndex(), err)
		}
		c.snapIndex = snap.GetMetadata().GetIndex()
		c.snapBytes = uint64(len(snap.GetData()))
		cs = snap.GetMetadata().GetConfState()
	}
	c.state.Store(st)
	c.applied.set(st.AppliedIndex())
	c.setConfState(cs)
	if id := st.ClusterID(); id != "" && c.ClusterID() == "" {
		c.clusterID.Store(id)
	}
	rc := &raft.Config{
		ID: c.cfg.NodeID, ElectionTick: c.cfg.ElectionTicks, HeartbeatTick: c.cfg.HeartbeatTicks,
		Storage: c.store, Applied: raftApplied(st.AppliedIndex(), hs.GetCommit()),
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum: true, PreVote: true, ReadOnlyOption: raft.ReadOnlySafe,
		StepDownOnRemoval: true, Logger: newRaftLogger(c.log),
		AsyncStorageWrites: true, ApplyUnstableCommitted: true, // storage_loops.go
		// A follower learns a new commit index without answering it: one
		// message from each follower per write, not two (third_party/raft/
		// CORRAL.md, "Commit notices").
		CommitNotices: true,
	}
	empty, err := c.store.IsEmpty()
	if err != nil {
		return fmt.Errorf("inspect raft log: %w", err)
	}
	if empty && raft.IsEmptyHardState(hs) && !c.joining {
		peers := make([]raft.Peer, 0, len(c.cfg.Peers))
		for _, id := range slices.Sorted(maps.Keys(c.cfg.Peers)) {
			peers = append(peers, raft.Peer{ID: id, Context: []byte(c.cfg.Peers[id])})
		}
		c.log.Info("bootstrapping a new cluster", "voters", slices.Sorted(maps.Keys(c.cfg.Peers)))
		c.node = raft.StartNode(rc, peers)
		return nil
	}
	if rc.Applied < st.AppliedIndex() {
		c.log.Info("restored state is ahead of the synced commit index: raft replays the difference, which apply skips",
			"applied", st.AppliedIndex(), "commit", hs.GetCommit())
	}
	c.node = raft.RestartNode(rc)
	if len(cs.GetVoters()) > 0 {
		c.syncPeers(cs)
	}
	return nil
}

// maybeJoin contacts --join endpoints when the data dir is brand new.
func (c *Replica) maybeJoin() error {
	if len(c.cfg.Join) == 0 {
		return nil
	}
	empty, err := c.store.IsEmpty()
	if err != nil {
		return fmt.Errorf("inspect raft log: %w", err)
	}
	if !empty {
		return nil // restarting a controller that already joined
	}
	return c.joinCluster()
}

// ClusterID returns the cluster id, or "" before the first leader set it.
func (c *Replica) ClusterID() string { return c.clusterID.Load().(string) }

// LeaderID returns the leader this member knows of, 0 if none.
func (c *Replica) LeaderID() uint64 { return c.leader.Load() }

// Term returns the current raft term.
func (c *Replica) Term() uint64 { return c.term.Load() }

// IsLeader reports whether this member leads (as last published by the
// raft loop).
func (c *Replica) IsLeader() bool { return c.isLeader.Load() }

// CommitIndex is the commit index this member knows.
func (c *Replica) CommitIndex() uint64 { return c.commit.Load() }

// Applied returns the applied index and a channel closed when it changes.
func (c *Replica) Applied() (uint64, <-chan struct{}) { return c.applied.get() }

// State returns the current state machine (read-only use).
func (c *Replica) State() *metadata.State { return c.state.Load() }

// Status is raft's view of this member (the leader's includes every
// follower's progress).
func (c *Replica) Status() raft.Status { return c.node.Status() }

// LastIndex is the index of the last entry in the local log.
func (c *Replica) LastIndex() (uint64, error) { return c.store.LastIndex() }

// FirstIndex is the index of the first entry still in the local log.
func (c *Replica) FirstIndex() (uint64, error) { return c.store.FirstIndex() }

// LogTerm is the term of the entry at index i, if still in the log.
func (c *Replica) LogTerm(i uint64) (uint64, error) { return c.store.Term(i) }

// PeerStatus is the transport's view of a peer.
func (c *Replica) PeerStatus(id uint64) transport.PeerStatus { return c.tr.PeerStatus(id) }

// ConfState is the current raft configuration.
func (c *Replica) ConfState() *pb.ConfState { return c.currentConfState() }

// Members returns the voters and learners of the current configuration.
func (c *Replica) Members() (voters, learners map[uint64]bool) { return c.members() }

// LastHeard is when this member last received a raft message from id.
func (c *Replica) LastHeard(id uint64) time.Time { return c.heard.get(id) }

// LeaderChanges are the changes of leader seen in the hour before now.
func (c *Replica) LeaderChanges(now time.Time) []LeaderChange { return c.leaders.lastHour(now) }

func (c *Replica) setConfState(cs *pb.ConfState) {
	c.confMu.Lock()
	c.confState = cs
	c.confMu.Unlock()
}

func (c *Replica) currentConfState() *pb.ConfState {
	c.confMu.RLock()
	defer c.confMu.RUnlock()
	return c.confState
}

func newClusterID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var (
	// ErrNoLeader means no leader is known; nothing was proposed, so the
	// request can safely be retried on another controller.
	ErrNoLeader = fault.ErrNoLeader
	// ErrTimeout means the request was proposed but not seen applied in time;
	// its outcome is unknown.
	ErrTimeout       = fault.ErrTimeout
	errLeaderChanged = fmt.Errorf("leader changed while the request was in flight: %w", ErrTimeout)
	// errNotApplied answers a proposal every replica skipped because a
	// leader of another term appended it: it had no effect, so it counts
	// as "no leader" (retry, maybe elsewhere) rather than as a timeout.
	errNotApplied = fmt.Errorf("the leader changed before this request was appended, so it was not applied; retry: %w", ErrNoLeader)
	// ErrStopped means the controller is shutting down.
	ErrStopped = fault.ErrStopped
)

// ReloadTLS reads the TLS dir again: new handshakes (raft, peer API,
// workers) use the new certificate, key and CA; established connections
// stay up. Files that do not load, do not chain to ca.pem or name another
// identity are refused and the current ones kept. The outcome is logged.
// With an injected transport there is nothing to reload.
func (c *Replica) ReloadTLS() error {
	if c.tls == nil {
		return errors.New("reload TLS: this controller uses no TLS dir (injected transport)")
	}
	return c.tls.ReloadAndLog(c.log)
}

// ListenPeerHTTP listens for other controllers' API requests on the
// cluster port (QUIC, their own ALPN, controller certificates only); with
// an injected transport it returns nil.
func (c *Replica) ListenPeerHTTP() (transport.StreamListener, error) {
	q, ok := c.tr.(*transport.QUIC)
	if !ok {
		return nil, nil
	}
	ln, err := q.ListenStreams(transport.ALPNPeerHTTP)
	if err != nil {
		return nil, fmt.Errorf("listen for peer API requests: %w", err)
	}
	return ln, nil
}

// PeerHTTPDialer opens API streams to other controllers at their cluster
// addresses over QUIC, refusing a server whose certificate names another
// node; with an injected transport it returns nil.
func (c *Replica) PeerHTTPDialer() transport.PeerDialFunc {
	q, ok := c.tr.(*transport.QUIC)
	if !ok {
		return nil
	}
	return func(ctx context.Context, node uint64) (transport.Stream, error) {
		addr, _ := c.MemberAddress(node)
		if addr == "" {
			return nil, fmt.Errorf("controller %d: cluster address unknown", node)
		}
		return q.DialPeerHTTP(ctx, node, addr)
	}
}

// ListenWorkers listens for worker streams on the cluster port (QUIC,
// their own ALPN); with an injected transport it returns nil.
func (c *Replica) ListenWorkers() (transport.StreamListener, error) {
	q, ok := c.tr.(*transport.QUIC)
	if !ok {
		return nil, nil
	}
	ln, err := q.ListenStreams(transport.ALPNWorker)
	if err != nil {
		return nil, fmt.Errorf("listen for workers: %w", err)
	}
	return ln, nil
}
