// Package worker is the worker agent: it stores nothing and votes for
// nothing. It registers with the leader over QUIC (the worker protocol in
// transport), heartbeats, fences itself when no controller has answered
// for its self-fence time, follows leadership, and applies the
// assignments it is sent through its executor. It never imports the
// controller tree; the controllers are only addresses and a protocol to it.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/roles/worker/executor"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/corral-dev/corral/transport"
)

// Worker is a worker agent. It starts fenced, registers with the leader
// (any controller redirects it there) to get an epoch, then heartbeats.
// One goroutine (run) owns the session; the connection's reader and the
// dialer only feed it through channels.
//
// Fencing is symmetric: the worker refuses controller messages from an
// epoch older than the newest it has seen, and considers itself fenced when
// no heartbeat was acknowledged for SelfFenceFraction of the session
// timeout, before the leader can fence it.
type Worker struct {
	cfg         Config
	id          string
	incarnation string
	log         *slog.Logger
	reg         *prometheus.Registry
	met         *workerAgentMetrics
	dialer      transport.StreamDialer
	ownDialer   bool
	dirLock     *dirLock             // held from Start until the loop ends
	tls         *transport.TLSBundle // nil with an injected Dialer
	load        func() transport.WorkerLoad

	httpSrv *http.Server
	httpLn  net.Listener

	// Published for HTTP handlers, Status and tests.
	pubAlive     atomic.Bool
	pubEpoch     atomic.Uint64
	pubCtrlEpoch atomic.Uint64
	pubLeader    atomic.Pointer[string]
	pubStandbys  atomic.Pointer[[]string]
	// ackedAt is the send time (Unix ns) of the last acknowledged
	// heartbeat, 0 while fenced: supervisors are refreshed only while it is
	// recent (worker_jobs.go).
	ackedAt atomic.Int64

	stop     context.Context // cancelled by Close: time to leave
	stopFn   context.CancelFunc
	life     context.Context // cancelled when run has returned
	lifeFn   context.CancelFunc
	leave    atomic.Bool // Close leaves gracefully; halt does not
	done     chan struct{}
	inbox    chan inbound
	dialc    chan dialResult
	kickT    *time.Timer
	fenceT   *time.Timer
	silentT  *time.Timer // looks for a silent leader between ticks (session.go)
	closeErr error

	// Owned by run.
	conn           *wconn            // the session's connection (to the leader, once registered)
	probe          *wconn            // a second connection asking who leads while the leader is late
	standby        map[string]*wconn // idle connections to the other controllers (standby.go)
	standbyAt      time.Time         // when to dial a missing standby (zero: not yet scheduled)
	standbyDialing bool
	probeAfter     time.Time
	probeReask     time.Time     // when to ask again on the probe (zero: not waiting)
	probeTries     int           // answers on this probe that named no new leader yet
	probeAsked     time.Time     // when the probe was last asked (zero: no answer awaited)
	probeWait      time.Duration // how long its answer may take (probe.go)
	probeTargets   []string      // whom the probe was started to ask (probe.go)
	connSeq        uint64
	dialing        bool
	preferred      string // the leader's address, tried first
	avoid          string // the controller that just failed us, tried last
	avoidCtrl      uint64 // the highest controller epoch seen when it did
	avoidAt        time.Time
	alive          bool
	epoch          uint64
	timeout        time.Duration // the leader's session timeout
	lastAcked      time.Time     // send time of the last acknowledged heartbeat
	ackedBy        string        // the leader that last acknowledged (or registered) the session
	ackedByCtrl    uint64        // and its controller epoch (OnLeaderAck)
	pending        map[uint64]time.Time
	regSeq         uint64
	regSentAt      time.Time
	seq            uint64
	highestCtrl    uint64
	notBefore      time.Time // no registration before (after a refusal)
	dialFails      int
	lastRefusal    transport.RefuseCode
	out            []byte
	jobs           workerJobs           // allocations (worker_jobs.go)
	cgroups        executor.CgroupSetup // task limits (cgroup.go)
}

type wconn struct {
	id    uint64
	s     transport.Stream
	addr  string
	fresh bool // preamble not written yet
	// lastRecv is when a message last arrived on this connection.
	lastRecv time.Time
	// writeDL is the stream's write deadline, pushed out now and then.
	writeDL time.Time
	// lastSent and pingSeq: a standby's last keep-alive heartbeat.
	lastSent time.Time
	pingSeq  uint64
}

type inbound struct {
	connID uint64
	msg    transport.ControllerMessage
	err    error
}

type dialResult struct {
	s       transport.Stream
	addr    string
	err     error
	standby bool // dialed as a standby (standby.go)
}

// Status is a snapshot of a worker's session.
type Status struct {
	ID              string
	Incarnation     string
	Alive           bool
	Epoch           uint64
	ControllerEpoch uint64
	Leader          string   // address of the controller it heartbeats to
	Standbys        []string // addresses of the controllers it holds standby connections to, sorted
}

// Start resolves the worker's id, starts its HTTP server (if any)
// and begins registering. It returns before the worker is alive.
func Start(cfg Config) (*Worker, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lock, err := lockDataDir(cfg.DataDir) // dirlock.go; released by finish
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			lock.release()
		}
	}()
	var bundle *transport.TLSBundle
	if cfg.Dialer == nil {
		if cfg.JoinToken != "" {
			if cfg.TLSDir, err = joinCluster(&cfg); err != nil { // join.go
				return nil, err
			}
		}
		if bundle, err = transport.LoadTLSDir(cfg.TLSDir); err != nil {
			return nil, fmt.Errorf("load TLS files: %w", err)
		}
		if cfg.ID, err = idFromCertificate(bundle.Self, cfg.ID); err != nil {
			return nil, err
		}
	}
	id, err := resolveWorkerID(cfg.DataDir, cfg.ID)
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg: cfg, id: id, incarnation: newIncarnation(), reg: cfg.Registry, dialer: cfg.Dialer, load: cfg.Load, tls: bundle,
		done: make(chan struct{}), inbox: make(chan inbound, 16), dialc: make(chan dialResult, 1),
		pending: map[uint64]time.Time{}, standby: map[string]*wconn{}, timeout: transport.DefaultSessionTimeout,
	}
	w.log = cfg.Logger.With("component", "worker", "worker", id)
	w.jobs.init()
	if !cfg.Simulate {
		w.isolation() // isolation.go
	}
	if cfg.EnforceLimits && !cfg.Simulate {
		w.cgroups = executor.DetectCgroups()
		w.cfg.Labels[LimitsLabel] = w.cgroups.Label()
		if w.cgroups.AllocsRoot == "" {
			w.log.Warn("task resource limits are not enforced on this machine", "reason", w.cgroups.Reason)
		} else {
			w.log.Info("task resource limits enforced with cgroup v2", "cgroup", w.cgroups.AllocsRoot)
		}
	}
	if w.reg == nil {
		w.reg = prometheus.NewRegistry()
		w.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		transport.RegisterBuildInfo(w.reg) // in combined mode the controller's registry has it already
	}
	w.met = newWorkerAgentMetrics(w.reg)
	if bundle != nil {
		// In combined mode the controller registered it first, from the same TLS dir.
		if err := transport.RegisterCertExpiry(w.reg, "node", bundle.Leaf); err != nil {
			return nil, err
		}
	}
	if w.load == nil {
		w.load = (&procLoad{}).sample
	}
	if w.dialer == nil {
		d, err := NewDialer(bundle, w.log, cfg.HeartbeatInterval)
		if err != nil {
			return nil, err
		}
		w.dialer, w.ownDialer = d, true
		// A busy host that reads the worker's socket too slowly loses
		// heartbeat acknowledgements in the kernel (OPERATIONS.md, "UDP
		// receive buffers"); a shared dialer (the bench's) is not this
		// worker's to report.
		if err := transport.RegisterUDPSocketCollector(w.reg, "corral_worker_", d.UDPSocket); err != nil {
			_ = d.Close()
			return nil, err
		}
	}
	if cfg.HTTPAddr != "" {
		if err := w.startHTTP(); err != nil {
			if w.ownDialer {
				_ = w.dialer.Close()
			}
			return nil, err
		}
	}
	w.leave.Store(true)
	w.stop, w.stopFn = context.WithCancel(context.Background())
	w.life, w.lifeFn = context.WithCancel(context.Background())
	w.kickT = time.NewTimer(0)
	w.fenceT = time.NewTimer(time.Hour)
	w.fenceT.Stop()
	w.silentT = time.NewTimer(time.Hour)
	w.silentT.Stop()
	w.log.Info("worker started", "incarnation", w.incarnation, "controllers", cfg.Controllers,
		"heartbeat_interval", cfg.HeartbeatInterval, "http_addr", w.HTTPAddr(), "cpu_millicores", cfg.CPUMillis,
		"memory_mb", cfg.MemoryMB, "labels", cfg.Labels)
	w.dirLock, started = lock, true
	go w.run()
	return w, nil
}

// Run runs a worker until ctx ends, then leaves gracefully.
func Run(ctx context.Context, cfg Config) error {
	w, err := Start(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return w.Close()
}

// ReloadTLS reads the TLS dir again (SIGHUP): later connections to the
// controllers present the new certificate and check them against the new
// CA, while the current session's connection stays up. Files that do not
// load, do not chain to ca.pem or name another identity are refused,
// logged, and the current ones kept; the error says why.
func (w *Worker) ReloadTLS() error {
	if w.tls == nil {
		return errors.New("reload TLS: this worker uses no TLS dir (injected dialer)")
	}
	return w.tls.ReloadAndLog(w.log)
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.id }

// Registry returns the registry holding the worker's metrics.
func (w *Worker) Registry() *prometheus.Registry { return w.reg }

// Status returns the worker's session as last published by its loop.
func (w *Worker) Status() Status {
	st := Status{ID: w.id, Incarnation: w.incarnation, Alive: w.pubAlive.Load(), Epoch: w.pubEpoch.Load(),
		ControllerEpoch: w.pubCtrlEpoch.Load()}
	if l := w.pubLeader.Load(); l != nil {
		st.Leader = *l
	}
	if s := w.pubStandbys.Load(); s != nil {
		st.Standbys = *s
	}
	return st
}

// Close tells the leader the worker is leaving (so it is marked left at
// once, not fenced after the timeout), then stops.
func (w *Worker) Close() error {
	w.stopFn()
	<-w.done
	return w.closeErr
}

// Halt stops without telling anyone, like a crash: tests use it for
// kill -9 (the leader fences the worker after its session timeout).
func (w *Worker) Halt() {
	w.leave.Store(false)
	_ = w.Close()
}

func (w *Worker) run() {
	defer close(w.done)
	defer w.finish()
	tick := time.NewTicker(w.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop.Done():
			if w.leave.Load() {
				if w.jobs.runner != nil {
					w.jobs.runner.Close() // stop the tasks before saying goodbye
				}
				w.leaveCluster()
			}
			return
		case <-w.jobs.kickc:
			w.flushReports(time.Now())
		case d := <-w.jobs.logc:
			if w.alive && w.conn != nil {
				w.write(w.conn, d)
			}
		case now := <-tick.C:
			w.onTick(now)
		case <-w.kickT.C:
			w.onKick(time.Now())
		case now := <-w.fenceT.C:
			w.onFenceTimer(now)
		case now := <-w.silentT.C:
			w.onSilenceCheck(now)
		case r := <-w.dialc:
			w.onDial(r)
		case in := <-w.inbox:
			w.onInbound(in)
		}
	}
}

func (w *Worker) finish() {
	w.dropConn()
	w.closeStandbys()
	w.fenceT.Stop()
	w.silentT.Stop()
	w.kickT.Stop()
	w.setAlive(false)
	w.lifeFn()
	var errs []error
	if w.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		errs = append(errs, w.httpSrv.Shutdown(ctx))
		cancel()
	}
	if w.ownDialer {
		errs = append(errs, w.dialer.Close())
	}
	if err := errors.Join(errs...); err != nil {
		w.closeErr = fmt.Errorf("stop worker %s: %w", w.id, err)
	}
	w.dirLock.release()
	w.log.Info("worker stopped")
}

func (w *Worker) setAlive(alive bool) {
	w.pubAlive.Store(alive)
	if alive {
		w.met.alive.Set(1)
	} else {
		w.met.alive.Set(0)
	}
}

// retryShort is how soon to try again when no leader is known or the
// leader is not ready: much less than a heartbeat interval, so a failover
// costs the worker as little of its self-fence margin as possible.
func (w *Worker) retryShort() time.Duration {
	return min(max(w.cfg.HeartbeatInterval/8, 20*time.Millisecond), 250*time.Millisecond)
}
