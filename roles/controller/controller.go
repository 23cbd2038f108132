package controller

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/raftlog"
	"github.com/corral-dev/corral/roles/controller/api"
	"github.com/corral-dev/corral/roles/controller/coord"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/roles/controller/sessions"
	"github.com/corral-dev/corral/transport"
)

// Controller is one member of the metadata quorum. One goroutine (run)
// owns the raft node; HTTP handlers talk to it through proposals, ReadIndex
// requests and atomically published state.
type Controller struct {
	cfg   Config
	log   *slog.Logger
	store *raftlog.Store
	node  raft.Node
	tr    transport.Transport
	reg   *prometheus.Registry
	met   *controllerMetrics

	state     atomic.Pointer[metadata.State] // replaced when a snapshot is installed
	clusterID atomic.Value                   // string; "" until known
	leader    atomic.Uint64
	term      atomic.Uint64
	commit    atomic.Uint64
	isLeader  atomic.Bool

	applied appliedWaiter
	waits   waitRegistry
	reads   *readLoop
	nextReq atomic.Uint64

	memberMu  sync.Mutex // one membership change at a time
	heard     heardTracker
	confMu    sync.RWMutex
	confState *pb.ConfState
	snapIndex uint64 // loop-owned: index of the latest local snapshot
	joining   bool   // empty data dir joining a running cluster via --join

	// leaderHooks run on the raft loop when this controller gains or loses
	// leadership (term is the new term); they must not block.
	leaderHooks []func(isLeader bool, term uint64)
	leaders     leaderHistory     // leader changes of the last hour (dashboard)
	fwdProps    chan *pb.Message  // proposals forwarded by followers (forward.go)
	workers     *sessions.Manager // worker sessions (sessions_adapter.go)
	sched       *schedLoop        // evaluations while leading (scheduler_loop.go)
	lessor      *coord.Lessor     // lease deadlines while leading (coord_loop.go)
	hub         *coord.Hub        // watch history and fan-out (coord_loop.go)

	leasesExpired prometheus.Counter // coord_loop.go

	api     *api.Server // HTTP API and dashboard (package api)
	stopc   chan struct{}
	done    chan struct{}
	failed  chan error
	closeMu sync.Once
}

// Start opens the data dir, starts raft, the transport and (when
// HTTPAddr is set) the HTTP API.
func Start(cfg Config) (*Controller, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	c := &Controller{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "controller", "node", cfg.NodeID),
		reg:      prometheus.NewRegistry(),
		stopc:    make(chan struct{}),
		done:     make(chan struct{}),
		failed:   make(chan error, 1),
		fwdProps: make(chan *pb.Message, forwardedProposalQueue),
	}
	c.clusterID.Store("")
	c.met = newControllerMetrics(c.reg)
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
	// Inbound messages reach raft, so the transport starts only now.
	if err := c.tr.Start(c); err != nil {
		c.node.Stop()
		c.tr.Close()
		c.store.Close()
		return nil, fmt.Errorf("start controller transport: %w", err)
	}
	c.reads = newReadLoop(c)
	c.startCoord()
	if err := c.startWorkerSessions(); err != nil {
		c.node.Stop()
		c.tr.Close()
		c.store.Close()
		return nil, err
	}
	c.startScheduler()
	go c.run()
	go c.forwardLoop()
	go c.reads.run()
	go c.promoteLoop()
	go c.expireLoop() // coord_loop.go
	c.api = api.New(api.Config{
		NodeID: cfg.NodeID, HTTPAddr: cfg.HTTPAddr, APITokenFile: cfg.APITokenFile, HTTPInsecure: cfg.HTTPInsecure,
		EnablePprof: cfg.EnablePprof, RequestTimeout: cfg.RequestTimeout, TickInterval: cfg.TickInterval,
		Registry: c.reg, Stopping: c.stopc, Logger: c.log,
	}, c.apiBackend())
	if cfg.HTTPAddr != "" {
		if err := c.api.Listen(); err != nil {
			c.Close()
			return nil, err
		}
		go c.announceHTTP()
	}
	c.log.Info("controller started", "cluster_addr", cfg.ClusterAddr, "http_addr", c.HTTPAddr(),
		"cluster_id", c.ClusterID(), "peers", len(cfg.Peers))
	return c, nil
}

// openStore opens the raft log and checks the data dir belongs to this node
// and, when known, to the requested cluster.
func (c *Controller) openStore() error {
	dir := filepath.Join(c.cfg.DataDir, "raft")
	st, err := raftlog.Open(raftlog.Options{
		Dir: dir, NoSync: c.cfg.NoSync, Logger: c.log,
		OnSync: func(d time.Duration) { c.met.syncDuration.Observe(d.Seconds()) },
	})
	if err != nil {
		return fmt.Errorf("open raft log %s: %w", dir, err)
	}
	c.store = st
	if err := c.checkIdentity(); err != nil {
		st.Close()
		return err
	}
	return nil
}

func (c *Controller) checkIdentity() error {
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

func (c *Controller) startTransport() error {
	if c.cfg.Transport != nil {
		c.tr = c.cfg.Transport
	} else {
		bundle, err := transport.LoadTLSDir(c.cfg.TLSDir)
		if err != nil {
			return fmt.Errorf("load TLS files: %w", err)
		}
		q, err := transport.NewQUIC(transport.QUICConfig{
			NodeID: c.cfg.NodeID, ListenAddr: c.cfg.ClusterAddr, TLS: bundle,
			ClusterID: c.ClusterID, Logger: c.log, Registerer: c.reg,
		})
		if err != nil {
			return fmt.Errorf("listen for controllers on %s: %w", c.cfg.ClusterAddr, err)
		}
		c.tr = q
	}
	for id, addr := range c.cfg.Peers {
		if id != c.cfg.NodeID {
			c.tr.AddPeer(id, addr)
		}
	}
	return nil
}

func (c *Controller) startRaft() error {
	hs, cs, err := c.store.InitialState()
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	snap, err := c.store.Snapshot()
	if err != nil {
		return fmt.Errorf("read raft snapshot: %w", err)
	}
	st := metadata.New()
	if !raft.IsEmptySnap(snap) {
		if st, err = metadata.Restore(snap.GetData()); err != nil {
			return fmt.Errorf("restore state machine from snapshot at index %d: %w", snap.GetMetadata().GetIndex(), err)
		}
		c.snapIndex = snap.GetMetadata().GetIndex()
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
		Storage: c.store, Applied: st.AppliedIndex(),
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum: true, PreVote: true, ReadOnlyOption: raft.ReadOnlySafe,
		StepDownOnRemoval: true, Logger: newRaftLogger(c.log),
	}
	empty, err := c.store.IsEmpty()
	if err != nil {
		return fmt.Errorf("inspect raft log: %w", err)
	}
	if empty && raft.IsEmptyHardState(hs) && !c.joining {
		peers := make([]raft.Peer, 0, len(c.cfg.Peers))
		for _, id := range sortedIDs(c.cfg.Peers) {
			peers = append(peers, raft.Peer{ID: id, Context: []byte(c.cfg.Peers[id])})
		}
		c.log.Info("bootstrapping a new cluster", "voters", sortedIDs(c.cfg.Peers))
		c.node = raft.StartNode(rc, peers)
		return nil
	}
	c.node = raft.RestartNode(rc)
	if len(cs.GetVoters()) > 0 {
		c.syncPeers(cs)
	}
	return nil
}

// maybeJoin contacts --join endpoints when the data dir is brand new.
func (c *Controller) maybeJoin() error {
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

// ClusterAddrs returns the controllers' cluster addresses this controller
// was started with, its own first: where a worker in the same process
// (combined mode) should look for the leader.
func (c *Controller) ClusterAddrs() []string {
	addrs := []string{c.cfg.Peers[c.cfg.NodeID]}
	for _, id := range sortedIDs(c.cfg.Peers) {
		if id != c.cfg.NodeID {
			addrs = append(addrs, c.cfg.Peers[id])
		}
	}
	return addrs
}

// ClusterID returns the cluster id, or "" before the first leader set it.
func (c *Controller) ClusterID() string { return c.clusterID.Load().(string) }

// Registry exposes this controller's metrics registry.
func (c *Controller) Registry() *prometheus.Registry { return c.reg }

// LeaderID returns the leader this controller knows of, 0 if none.
func (c *Controller) LeaderID() uint64 { return c.leader.Load() }

// Term returns the current raft term.
func (c *Controller) Term() uint64 { return c.term.Load() }

// State returns the current state machine (read-only use).
func (c *Controller) State() *metadata.State { return c.state.Load() }

// Handler returns the HTTP API (auth and metrics applied), to serve
// in-process.
func (c *Controller) Handler() http.Handler { return c.api.Handler() }

// HTTPAddr returns the address the API listens on ("" without HTTP).
func (c *Controller) HTTPAddr() string { return c.api.Addr() }

// Failed is closed with an error when the controller stopped on its own
// (a storage failure or a data dir of another cluster).
func (c *Controller) Failed() <-chan error { return c.failed }

func (c *Controller) setConfState(cs *pb.ConfState) {
	c.confMu.Lock()
	c.confState = cs
	c.confMu.Unlock()
}

func (c *Controller) currentConfState() *pb.ConfState {
	c.confMu.RLock()
	defer c.confMu.RUnlock()
	return c.confState
}

// Close stops the HTTP server, raft and the transport, then closes the log.
func (c *Controller) Close() error {
	c.closeMu.Do(func() {
		c.hub.Close() // end watch streams first
		if c.api != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = c.api.Shutdown(ctx)
			cancel()
		}
		close(c.stopc)
		<-c.done
		if c.workers != nil {
			c.workers.Close() // after the raft loop: no leadership hook runs any more
		}
		if c.sched != nil {
			c.sched.close()
		}
		c.node.Stop()
		_ = c.tr.Close()
		_ = c.store.Close()
		c.log.Info("controller stopped")
	})
	return nil
}

// Run starts a controller and blocks until ctx ends or the
// controller fails.
func Run(ctx context.Context, cfg Config) error {
	c, err := Start(cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		c.Close()
		return nil
	case err := <-c.failed:
		c.Close()
		return err
	}
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
	// ErrStopped means the controller is shutting down.
	ErrStopped = fault.ErrStopped
	// errNotLeader: this controller is not the leader and does not know
	// where the leader's API is.
	errNotLeader = fault.ErrNotLeader
)
