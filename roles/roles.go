// Package roles starts corral's three roles: RunController, RunWorker and
// RunCombined. It is all that cli/ needs, and the only package that sees
// both the controller tree (roles/controller/...) and the worker tree
// (roles/worker/...): combined mode runs one of each in a process.
package roles

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/backup"
	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/roles/worker"
	"github.com/corral-dev/corral/roles/worker/executor"
	"github.com/corral-dev/corral/transport"
)

// ControllerConfig configures a controller (see controller.Config).
type ControllerConfig = controller.Config

// ZKConfig is the ZooKeeper port's part of a ControllerConfig.
type ZKConfig = controller.ZKConfig

// Controller is a running controller (see controller.Controller).
type Controller = controller.Controller

// DefaultSessionTimeout is how long a worker may stay silent before the
// leader fences it.
const DefaultSessionTimeout = transport.DefaultSessionTimeout

// StartController starts a controller and returns once it serves.
func StartController(cfg ControllerConfig) (*Controller, error) { return controller.Start(cfg) }

// RunController runs a controller until ctx ends or it fails.
func RunController(ctx context.Context, cfg ControllerConfig, opts ...RunOption) error {
	o := runOptions(opts)
	c, err := controller.Start(cfg)
	if err != nil {
		return err
	}
	stopReloads := serveReloads(o.reloadTLS, c.ReloadTLS)
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-c.Failed():
	}
	stopReloads()
	c.Close()
	return failed
}

// RunOption adjusts RunController, RunWorker and RunCombined.
type RunOption func(*runOpts)

type runOpts struct {
	reloadTLS <-chan struct{}
}

// ReloadTLSOn makes the node reload its TLS dir (the ReloadTLS methods of
// its controller and worker) every time ch delivers, for as long as it
// runs: `corral run` feeds it from SIGHUP. A reload that fails is logged
// and the node keeps its current certificates.
func ReloadTLSOn(ch <-chan struct{}) RunOption {
	return func(o *runOpts) { o.reloadTLS = ch }
}

func runOptions(opts []RunOption) runOpts {
	var o runOpts
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// serveReloads calls every reload function, in order, each time ch
// delivers, until the returned stop function is called; stop returns once
// no reload runs any more. Failures are logged by the reload functions.
func serveReloads(ch <-chan struct{}, reloads ...func() error) (stop func()) {
	if ch == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-ch:
				for _, reload := range reloads {
					_ = reload()
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// ParsePeers parses "1@host:port,2@host:port" into id -> address.
func ParsePeers(s string) (map[uint64]string, error) { return controller.ParsePeers(s) }

// ValidateWorkerID reports why id cannot be a worker id, or nil.
func ValidateWorkerID(id string) error { return metadata.ValidateWorkerID(id) }

// Backup is a decoded backup file (see backup.Backup).
type Backup = backup.Backup

// RecoverResult says what offline recovery did (see backup.RecoverResult).
type RecoverResult = backup.RecoverResult

// DecodeBackup reads and checks a backup file.
func DecodeBackup(r io.Reader) (*Backup, error) { return backup.Decode(r) }

// RestoreDataDir writes a new data dir for one controller of a cluster
// restored from b.
func RestoreDataDir(dataDir string, nodeID uint64, peers map[uint64]string, b *Backup) error {
	return backup.RestoreDataDir(dataDir, nodeID, peers, b)
}

// RecoverDataDir turns a surviving controller's data dir into a one-member
// cluster (see backup.RecoverDataDir).
func RecoverDataDir(dataDir, clusterAddr string) (*RecoverResult, error) {
	return backup.RecoverDataDir(dataDir, clusterAddr)
}

// WorkerConfig configures a worker (see worker.Config).
type WorkerConfig = worker.Config

// Worker is a running worker agent (see worker.Worker).
type Worker = worker.Worker

// DefaultHeartbeatInterval is how often a worker heartbeats by default.
const DefaultHeartbeatInterval = worker.DefaultHeartbeatInterval

// DefaultElectionTicks is the controllers' default election timeout, in ticks.
const DefaultElectionTicks = controller.DefaultElectionTicks

// NewWorkerDialer returns the QUIC dialer a worker heartbeating every
// heartbeat uses (see worker.NewDialer).
func NewWorkerDialer(bundle *transport.TLSBundle, log *slog.Logger, heartbeat time.Duration) (*transport.QUICDialer, error) {
	return worker.NewDialer(bundle, log, heartbeat)
}

// StartWorker starts a worker agent.
func StartWorker(cfg WorkerConfig) (*Worker, error) { return worker.Start(cfg) }

// RunWorker runs a worker until ctx ends, then leaves the cluster.
func RunWorker(ctx context.Context, cfg WorkerConfig, opts ...RunOption) error {
	o := runOptions(opts)
	w, err := worker.Start(cfg)
	if err != nil {
		return err
	}
	stopReloads := serveReloads(o.reloadTLS, w.ReloadTLS)
	<-ctx.Done()
	stopReloads()
	return w.Close()
}

// ParseLabels parses "k=v,k2=v2" worker labels.
func ParseLabels(s string) (map[string]string, error) { return worker.ParseLabels(s) }

// SupervisorConfig configures `corral supervise` (see executor.SupervisorConfig).
type SupervisorConfig = executor.SupervisorConfig

// SuperviseMain runs `corral supervise` and returns its exit code.
func SuperviseMain(cfg SupervisorConfig) int { return executor.SuperviseMain(cfg) }

// ParseTaskCredential builds SupervisorConfig.Credential from supervise's --uid, --gid and --groups.
var ParseTaskCredential = executor.ParseCredential

// DefaultTaskUser is the user a worker running as root runs tasks as by default.
const DefaultTaskUser = worker.DefaultTaskUser

// ValidateGlobs reports the first malformed glob of --allowed-commands.
func ValidateGlobs(globs []string) error { return executor.ValidateGlobs(globs) }
