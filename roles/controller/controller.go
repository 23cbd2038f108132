// Package controller wires a controller together: the raft member
// (replica), worker sessions, leases and watches (coord), the scheduling
// loop and the HTTP API, started and stopped in one order, with one
// explicit list of what happens when leadership is gained or lost
// (leadershipChanged). The parts do their jobs in their own packages; this
// one decides how they meet.
package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/api"
	"github.com/corral-dev/corral/roles/controller/coord"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/roles/controller/replica"
	"github.com/corral-dev/corral/roles/controller/sessions"
	"github.com/corral-dev/corral/roles/controller/zk"
	"github.com/corral-dev/corral/transport"
)

// Controller is one member of the metadata quorum and, while it leads,
// the cluster's coordinator: it tracks worker sessions, expires leases and
// schedules. HTTP handlers reach it through the API's interfaces.
type Controller struct {
	cfg Config
	log *slog.Logger
	reg *prometheus.Registry
	r   *replica.Replica // raft, the log and the state machine

	workers *sessions.Manager // worker sessions (sessions_adapter.go)
	sched   *schedLoop        // evaluations while leading (scheduler_loop.go)
	lessor  *coord.Lessor     // lease deadlines while leading (coord_loop.go)
	hub     *coord.Hub        // watch history and fan-out (coord_loop.go)

	leasesExpired prometheus.Counter // coord_loop.go

	api     *api.Server       // HTTP API and dashboard (package api)
	peerRT  http.RoundTripper // the cluster link's HTTP (peerlink.go), nil without one
	zk      *zk.Server        // the ZooKeeper port (zkport.go), nil unless --zk-addr
	zkAddr  string            // where zk listens, once it does
	closeMu sync.Once

	started   time.Time   // when Start began (handoff.go)
	restarted bool        // the data dir held raft state when this process started (handoff.go)
	handedOff atomic.Bool // this process passed on a leadership it won soon after start (handoff.go)
	handOffs  prometheus.Counter
}

// Start opens the data dir, starts raft, the transport and (when
// HTTPAddr is set) the HTTP API.
func Start(cfg Config) (*Controller, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		cfg: cfg,
		log: cfg.Logger.With("component", "controller", "node", cfg.NodeID),
		reg: prometheus.NewRegistry(),

		started: time.Now(),
		handOffs: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_controller_leadership_handoffs_total",
			Help: "Leaderships this controller won soon after it started and passed on to one that holds the workers' standby connections."}),
	}
	c.reg.MustRegister(c.handOffs)
	transport.RegisterBuildInfo(c.reg)
	joinCA, err := loadJoinCA(&cfg) // join.go
	if err != nil {
		return nil, err
	}
	r, err := replica.Open(replica.Config{
		NodeID: cfg.NodeID, DataDir: cfg.DataDir, ClusterAddr: cfg.ClusterAddr, ClusterID: cfg.ClusterID,
		Peers: cfg.Peers, Join: cfg.Join, Token: cfg.Token, TLSDir: cfg.TLSDir, Transport: cfg.Transport,
		NoSync: cfg.NoSync, TickInterval: cfg.TickInterval, ElectionTicks: cfg.ElectionTicks,
		HeartbeatTicks: cfg.HeartbeatTicks, RequestTimeout: cfg.RequestTimeout, SnapshotEvery: cfg.SnapshotEvery,
		SnapshotCatchUp: cfg.SnapshotCatchUp, PromoteAfter: cfg.PromoteAfter, Logger: c.log, Registry: c.reg,
		Hooks: replica.Hooks{
			Applied: func(evs []metadata.Event) { c.hub.Publish(evs) },
			// c.zk is set (or left nil) before the raft loop starts.
			ZNodesApplied: func(evs []metadata.ZNodeEvent) {
				if c.zk != nil {
					c.zk.Applied(evs)
				}
			},
			SnapshotInstalled: func(st *metadata.State) {
				c.hub.Reset(st.Revision())
				if c.zk != nil {
					c.zk.Reset() // its clients re-arm their watches against the new state
				}
			},
			JobsChanged:       c.jobsChanged,
			LeadershipChanged: c.leadershipChanged,
			BeforeApply:       cfg.ApplyHook,
			SnapshotWriting:   cfg.SnapshotHook,
			BeforePersist:     cfg.PersistHook,
		},
	})
	if err != nil {
		return nil, err
	}
	c.r = r
	c.restarted = r.Term() > 0 // the persisted term; 0 for a new member
	c.startJoin(joinCA)        // join.go
	// The parts the hooks reach exist before the raft loop runs.
	c.startCoord()
	if err := c.startWorkerSessions(); err != nil {
		r.Abort()
		return nil, err
	}
	c.startScheduler()
	if err := c.newZK(); err != nil { // zkport.go
		r.Abort()
		return nil, err
	}
	r.Start()
	go c.expireLoop() // coord_loop.go
	var httpTLS *tls.Config
	if cfg.HTTPTLSCert != "" {
		kp, err := transport.NewKeyPairReloader(cfg.HTTPTLSCert, cfg.HTTPTLSKey, c.log)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("load --http-tls-cert/--http-tls-key: %w", err)
		}
		httpTLS = kp.ServerTLS()
		if err := transport.RegisterCertExpiry(c.reg, "http", kp.Leaf); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.peerRT = c.peerTransport()
	c.api = api.New(api.Config{
		NodeID: cfg.NodeID, HTTPAddr: cfg.HTTPAddr, AdvertiseAddr: cfg.HTTPAdvertiseAddr, APITokenFile: cfg.APITokenFile, HTTPInsecure: cfg.HTTPInsecure,
		AllowedHosts: cfg.HTTPAllowedHosts,
		MetricsAddr:  cfg.MetricsAddr, MetricsTokenFile: cfg.MetricsTokenFile,
		EnablePprof: cfg.EnablePprof, RequestTimeout: cfg.RequestTimeout, TickInterval: cfg.TickInterval,
		MaxConns: cfg.HTTPMaxConns, IdleTimeout: cfg.HTTPIdleTimeout, ReadTimeout: cfg.HTTPReadTimeout,
		Registry: c.reg, Stopping: r.Stopping(), Logger: c.log, PeerTransport: c.peerRT, TLS: httpTLS,
		PeerRoutes: map[string]http.Handler{zkKeepAlivePath: http.HandlerFunc(c.serveZKKeepAlive)},
		Limits: api.Limits{QuotaBytes: max(cfg.QuotaBytes, 0), MaxLeases: cfg.MaxLeases,
			MaxLeasesPerToken: cfg.MaxLeasesPerToken, MaxWatchesPerToken: cfg.MaxWatchesPerToken},
	}, c.apiBackend())
	c.registerQuotaMetrics(cfg.QuotaBytes)
	if cfg.HTTPAddr != "" {
		if err := c.api.Listen(); err != nil {
			c.Close()
			return nil, err
		}
		if err := c.servePeers(); err != nil {
			c.Close()
			return nil, err
		}
		addr, unreachable := cfg.announcedHTTPAddr(c.HTTPAddr())
		if unreachable {
			c.log.Warn("the API listens on every interface and announces that address, which other controllers, "+
				"'corral controller list' and the dashboard cannot use to reach this one; "+
				"set --http-advertise-addr HOST:PORT to an address they can reach", "http_addr", addr)
		}
		go r.AnnounceHTTP(addr)
	} else if cfg.PeerHTTPListener != nil {
		_ = cfg.PeerHTTPListener.Close() // no API to serve peers
	}
	if err := c.startZK(); err != nil {
		c.Close()
		return nil, err
	}
	c.log.Info("controller started", "cluster_addr", cfg.ClusterAddr, "http_addr", c.HTTPAddr(),
		"metrics_addr", c.MetricsAddr(),
		"cluster_id", c.ClusterID(), "peers", len(cfg.Peers))
	return c, nil
}

// leadershipChanged is what this controller does when it gains or loses
// leadership (Nomad's establishLeadership/revokeLeadership), in this
// order, on the raft loop, without blocking:
//  1. the lessor becomes (or stops being) the primary that expires leases;
//  2. the session table is loaded (or dropped) and every worker gets a
//     full session timeout from now;
//  3. the scheduler starts (or stops) evaluating;
//  4. a leader that started moments ago hands the leadership on, when
//     workers are registered (handoff.go).
func (c *Controller) leadershipChanged(isLeader bool, term uint64) {
	c.lessor.SetPrimary(isLeader)
	c.workers.LeadershipChanged(isLeader, term)
	c.sched.leadershipChanged(isLeader, term)
	if isLeader {
		c.maybeHandOff(term)
	}
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
func (c *Controller) ClusterID() string { return c.r.ClusterID() }

// ReloadTLS reads --tls-dir again (SIGHUP): new raft, peer API and worker
// handshakes use the new certificate, key and CA, while established
// connections stay up. Files that do not load, do not chain to ca.pem or
// name another identity are refused, logged, and the current ones kept;
// the error says why. The HTTPS pair (--http-tls-cert) needs no call: it
// is reloaded when its files change.
func (c *Controller) ReloadTLS() error { return c.r.ReloadTLS() }

// Registry exposes this controller's metrics registry.
func (c *Controller) Registry() *prometheus.Registry { return c.reg }

// LeaderID returns the leader this controller knows of, 0 if none.
func (c *Controller) LeaderID() uint64 { return c.r.LeaderID() }

// Term returns the current raft term.
func (c *Controller) Term() uint64 { return c.r.Term() }

// State returns the current state machine (read-only use).
func (c *Controller) State() *metadata.State { return c.r.State() }

// Propose replicates cmd and waits until this controller applied it.
func (c *Controller) Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	return c.r.Propose(ctx, cmd)
}

// AddController adds id as a learner (leader only).
func (c *Controller) AddController(ctx context.Context, id uint64, addr string) error {
	return c.r.AddController(ctx, id, addr)
}

// RemoveController removes id from the quorum (leader only).
func (c *Controller) RemoveController(ctx context.Context, id uint64, force bool) error {
	return c.r.RemoveController(ctx, id, force)
}

// TransferLeader hands leadership to id (leader only).
func (c *Controller) TransferLeader(ctx context.Context, id uint64) error {
	return c.r.TransferLeader(ctx, id)
}

// Handler returns the HTTP API (auth and metrics applied), to serve
// in-process.
func (c *Controller) Handler() http.Handler { return c.api.Handler() }

// HTTPAddr returns the address the API listens on ("" without HTTP).
func (c *Controller) HTTPAddr() string { return c.api.Addr() }

// MetricsAddr returns the address of the --metrics-addr listener ("" when
// metrics are served on the API port).
func (c *Controller) MetricsAddr() string { return c.api.MetricsAddr() }

// Failed delivers an error when the controller stopped on its own (a
// storage failure or a data dir of another cluster).
func (c *Controller) Failed() <-chan error { return c.r.Failed() }

// Close stops the HTTP server, raft and the transport, then closes the log.
func (c *Controller) Close() error {
	c.closeMu.Do(func() {
		c.hub.Close() // end watch streams first
		if c.zk != nil {
			_ = c.zk.Close() // and ZooKeeper clients, who move to another controller
		}
		if c.api != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = c.api.Shutdown(ctx)
			cancel()
		}
		// A long log since the last snapshot is snapshotted first, so that
		// the next start replays little (replica/stopsnapshot.go). The
		// wait is bounded; a snapshot already being written is finished by
		// Stop, as any snapshot is.
		ctx, cancel := context.WithTimeout(context.Background(), stopSnapshotWithin)
		if err := c.r.SnapshotBeforeStop(ctx); err != nil {
			c.log.Warn("no snapshot before stopping; the next start replays the log since the last one", "err", err)
		}
		cancel()
		c.r.Stop()        // the raft loop ends first: no leadership hook runs any more
		c.workers.Close() // then what used the replica
		c.sched.close()
		c.r.Close()
		c.log.Info("controller stopped")
	})
	return nil
}

// stopSnapshotWithin bounds the snapshot a stopping controller takes: a
// million keys took 1-2 s on a two-core machine; container runtimes allow
// 10 s between SIGTERM and SIGKILL by default.
const stopSnapshotWithin = 5 * time.Second

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
	case err := <-c.Failed():
		c.Close()
		return err
	}
}

var (
	// ErrNoLeader means no leader is known; nothing was proposed, so the
	// request can safely be retried on another controller.
	ErrNoLeader = fault.ErrNoLeader
	// ErrTimeout means the request was proposed but not seen applied in time;
	// its outcome is unknown.
	ErrTimeout = fault.ErrTimeout
	// ErrStopped means the controller is shutting down.
	ErrStopped = fault.ErrStopped
	// errNotLeader: this controller is not the leader and does not know
	// where the leader's API is.
	errNotLeader = fault.ErrNotLeader
)
