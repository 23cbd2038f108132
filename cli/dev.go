package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run a throwaway cluster on this machine for trying corral out: one controller and --workers workers",
		Description: "The workers run in this process, each with its own certificate and data dir, and run jobs'\n" +
			"tasks as this user. Without --data-dir the data lives in a fresh temporary directory that is\n" +
			"removed on exit; with it, the cluster (keys, jobs, workers' ids) is kept for the next run.\n" +
			"Example: corral dev --workers 3 --http-addr 127.0.0.1:9090",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "data-dir", EnvVars: envVars("data-dir"),
				Usage: "keep the data here (reused across runs); default: a fresh temporary directory"},
			&cli.StringFlag{Name: "http-addr", Value: "127.0.0.1:8080", EnvVars: envVars("http-addr"),
				Usage: "HOST:PORT for the HTTP API"},
			&cli.StringFlag{Name: "cluster-addr", Value: "127.0.0.1:7080", EnvVars: envVars("cluster-addr"),
				Usage: "HOST:PORT for controller-to-controller traffic (QUIC on UDP, the liveness link on TCP)"},
			&cli.IntFlag{Name: "workers", Value: 1, EnvVars: envVars("workers"),
				Usage: "how many workers to run (0: only the controller, which runs no jobs)"},
		}, append(zkFlags("127.0.0.1:2181"), logFlags()...)...),
		Action: devAction,
	}
}

func devAction(c *cli.Context) error {
	if err := wantArgs(c, 0); err != nil {
		return err
	}
	nWorkers := c.Int("workers")
	if nWorkers < 0 || nWorkers > maxDevWorkers {
		return fmt.Errorf("--workers must be between 0 and %d, got %d", maxDevWorkers, nWorkers)
	}
	logger, err := newLogger(c, c.App.ErrWriter)
	if err != nil {
		return err
	}
	// SIGINT and SIGTERM are taken over before anything starts: a Ctrl-C
	// while the node starts, or just after the hints are printed, then
	// shuts it down as usual (and removes a temporary data dir) instead of
	// killing the process. Taken after the hints, a SIGINT sent as soon as
	// they appeared killed it (seen in CI).
	ctx, stop := signalContext(c.Context)
	defer stop()
	dataDir, temporary := c.String("data-dir"), false
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "corral-dev-"); err != nil {
			return fmt.Errorf("create temporary data dir: %w", err)
		}
		temporary = true
		defer func() {
			if err := os.RemoveAll(dataDir); err != nil {
				logger.Warn("could not remove temporary data dir", "dir", dataDir, "err", err)
			}
		}()
	}
	// A kept data dir keeps its certificates: issuing new ones would swap them under a `corral dev` that still
	// runs on it (the second one then fails: the data dir is in use).
	tlsDir := filepath.Join(dataDir, "tls")
	if !fileExists(filepath.Join(tlsDir, transport.NodeFile)) {
		if err := transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1", "localhost"}); err != nil {
			return fmt.Errorf("create dev certificates: %w", err)
		}
	}
	clusterAddr := c.String("cluster-addr")
	ctrl, err := roles.StartController(roles.ControllerConfig{
		NodeID:      1,
		DataDir:     dataDir,
		ClusterAddr: clusterAddr,
		HTTPAddr:    c.String("http-addr"),
		Peers:       map[uint64]string{1: clusterAddr},
		TLSDir:      tlsDir,
		ZK:          zkConfig(c),
		Logger:      logger,
	})
	if err != nil {
		return fmt.Errorf("start dev controller: %w", err)
	}
	workers, err := startDevWorkers(nWorkers, dataDir, tlsDir, ctrl.ClusterAddrs(), logger)
	if err != nil {
		_ = ctrl.Close()
		return err
	}
	printDevHints(c.App.Writer, ctrl.HTTPAddr(), ctrl.ZKAddr(), dataDir, temporary, len(workers))

	var failed error
	select {
	case <-ctx.Done():
	case err := <-ctrl.Failed():
		failed = fmt.Errorf("dev controller failed: %w", err)
	}
	// Workers leave first, while the controller can still commit that they left.
	var errs []error
	for _, w := range workers {
		if err := w.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stop worker %s: %w", w.ID(), err))
		}
	}
	if err := ctrl.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop dev controller: %w", err))
	}
	if failed != nil {
		return errors.Join(append([]error{failed}, errs...)...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	where := "data removed"
	if !temporary {
		where = "data kept in " + dataDir
	}
	_, err = fmt.Fprintf(c.App.Writer, "corral dev: stopped (%s). Bye.\n", where)
	return err
}

// maxDevWorkers bounds --workers: each worker is a goroutine set and a QUIC session, cheap, but a typo like
// --workers 1000 should not start a thousand.
const maxDevWorkers = 64

// startDevWorkers starts n workers in this process, worker i with id dev-worker-i, its own certificate from the
// dev CA in caDir and its data under dataDir/workers/dev-worker-i (its id and allocations' logs stay there for a
// kept --data-dir). They run tasks as this user, without cgroup limits: moving this process into a cgroup of
// its own is not what `corral dev` should do to a laptop.
func startDevWorkers(n int, dataDir, caDir string, controllers []string, logger *slog.Logger) ([]*roles.Worker, error) {
	var started []*roles.Worker
	stopAll := func() {
		for _, w := range started {
			_ = w.Close()
		}
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("dev-worker-%d", i)
		dir := filepath.Join(dataDir, "workers", id)
		tlsDir := filepath.Join(dir, "tls")
		if !fileExists(filepath.Join(tlsDir, transport.NodeFile)) {
			if _, err := transport.IssueCert(caDir, transport.RoleWorker, id, nil, tlsDir); err != nil {
				stopAll()
				return nil, fmt.Errorf("issue the certificate of dev worker %s: %w", id, err)
			}
		}
		w, err := roles.StartWorker(roles.WorkerConfig{
			ID: id, DataDir: dir, TLSDir: tlsDir, Controllers: controllers,
			Labels: map[string]string{"dev": "true"}, Logger: logger,
		})
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("start dev worker %s: %w", id, err)
		}
		started = append(started, w)
	}
	return started, nil
}

// printDevHints tells a first-time user what to try against the dev cluster.
func printDevHints(w io.Writer, httpAddr, zkAddr, dataDir string, temporary bool, workers int) {
	base := "http://" + httpAddr
	eps := ""
	if base != defaultEndpoint {
		eps = " --endpoints " + base
	}
	keep := "kept after exit; pass the same --data-dir to continue"
	if temporary {
		keep = "removed on exit; pass --data-dir to keep it"
	}
	jobs := "  (no workers: start with --workers 1 or more to run jobs)\n"
	if workers > 0 {
		jobs = fmt.Sprintf("  corral job run%s hello.json    # e.g. the job in README.md\n  corral worker list%s\n", eps, eps)
	}
	zk := "off (--zk-addr)"
	if zkAddr != "" {
		zk = zkAddr + " (ZooKeeper clients: connect string " + zkAddr + ")"
	}
	fmt.Fprintf(w, `corral dev: a one-node cluster with %[5]d worker(s) is running.
  API:        %[1]s
  ZooKeeper:  %[7]s
  data dir:   %[2]s (%[3]s)

Try it:
  curl -X PUT -H 'X-Corral-Client: curl' --data-binary 'hello' %[1]s/v1/kv/greeting
  curl %[1]s/v1/kv/greeting
  corral kv put%[4]s greeting hello
  corral kv get%[4]s greeting
  corral kv ls%[4]s gr
  corral status%[4]s
  corral bench kv%[4]s --clients 8 --duration 5s
%[6]s
Watch it:
  cluster:    %[1]s/v1/cluster
  readiness:  %[1]s/readyz
  metrics:    %[1]s/metrics

Press Ctrl-C to stop.
`, base, dataDir, keep, eps, workers, jobs, zk)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
