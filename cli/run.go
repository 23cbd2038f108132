package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/roles/gcpace"
	"github.com/corral-dev/corral/roles/procpace"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run a node of a cluster (controllers form the metadata quorum and serve the HTTP API)",
		Description: "Example, node 1 of three (run the same with --node-id 2 and 3 on the others):\n" +
			"   corral run --role controller --node-id 1 --data-dir /var/lib/corral \\\n" +
			"     --http-addr 127.0.0.1:8080 --tls-dir /var/lib/corral/tls \\\n" +
			"     --controllers 1@10.0.0.1:7001,2@10.0.0.2:7001,3@10.0.0.3:7001\n" +
			"Issue --tls-dir with 'corral certs issue --role controller --id N' (or 'corral certs create' for a test machine). Stops cleanly on SIGINT or SIGTERM; " +
			"SIGHUP reloads --tls-dir (certificate rotation: new connections use the new files, existing ones stay up).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "role", EnvVars: envVars("role"),
				Usage: "controller, worker or combined (a controller and a worker in one process: for development and very small clusters)"},
			&cli.StringFlag{Name: "node-id", EnvVars: envVars("node-id"),
				Usage: "controller: a positive integer listed in --controllers, never reused; worker: its id (default: kept in --data-dir, generated on first start)"},
			&cli.StringFlag{Name: "data-dir", EnvVars: envVars("data-dir"),
				Usage: "directory for the raft log and snapshots"},
			&cli.StringFlag{Name: "cluster-addr", EnvVars: envVars("cluster-addr"),
				Usage: "HOST:PORT to listen on for other controllers (QUIC on UDP, and the liveness link on TCP at the same port); default: this node's --controllers entry"},
			&cli.StringFlag{Name: "http-addr", EnvVars: envVars("http-addr"),
				Usage: "HOST:PORT for the HTTP API, e.g. 127.0.0.1:8080"},
			&cli.StringFlag{Name: "http-advertise-addr", EnvVars: envVars("http-advertise-addr"),
				Usage: "HOST:PORT other machines and browsers reach this controller's API on, announced to the cluster instead of --http-addr (set it when --http-addr is 0.0.0.0:PORT or [::]:PORT), e.g. ctrl1.example.com:8080"},
			&cli.StringFlag{Name: "controllers", EnvVars: envVars("controllers"),
				Usage: "every controller as ID@HOST:PORT (cluster addresses), e.g. 1@10.0.0.1:7001,2@10.0.0.2:7001"},
			&cli.StringFlag{Name: "join", EnvVars: envVars("join"),
				Usage: "join a running cluster: its controllers' API URLs (after 'corral controller add'); used instead of --controllers"},
			&cli.StringFlag{Name: "token", EnvVars: envVars("token"),
				Usage: "API token for the --join endpoints"},
			&cli.StringFlag{Name: "tls-dir", EnvVars: envVars("tls-dir"),
				Usage: "directory with ca.pem, node.pem and node-key.pem issued for this node ('corral certs issue'); reloaded on SIGHUP"},
			&cli.StringFlag{Name: "ca-dir", EnvVars: envVars("ca-dir"),
				Usage: "controller: directory with the cluster CA (ca.pem, ca-key.pem) to sign the certificates of workers that join with a token ('corral token create'); without it, join requests are refused"},
			&cli.StringFlag{Name: "cluster-id", EnvVars: envVars("cluster-id"),
				Usage: "expected cluster id; refuses a data dir that belongs to another cluster"},
			&cli.StringFlag{Name: "api-token-file", EnvVars: envVars("api-token-file"),
				Usage: "file holding the bearer token every API request must carry"},
			&cli.BoolFlag{Name: "http-insecure", EnvVars: envVars("http-insecure"),
				Usage: "allow serving the API on a non-loopback address in plain HTTP or without a token"},
			&cli.StringFlag{Name: "http-tls-cert", EnvVars: envVars("http-tls-cert"),
				Usage: "PEM certificate to serve the API and metrics over HTTPS (the node's node.pem will do); reloaded when the file changes"},
			&cli.StringFlag{Name: "http-tls-key", EnvVars: envVars("http-tls-key"),
				Usage: "PEM key of --http-tls-cert"},
			&cli.StringFlag{Name: "http-allowed-hosts", EnvVars: envVars("http-allowed-hosts"),
				Usage: "comma list of the Host names and IPs the API answers to, others get 421 (stops DNS rebinding); \"*\" allows any; default: the --http-addr and --http-advertise-addr hosts, localhost, 127.0.0.1, ::1 and the names in --http-tls-cert"},
			&cli.StringFlag{Name: "metrics-addr", EnvVars: envVars("metrics-addr"),
				Usage: "HOST:PORT to serve GET /metrics (and /healthz, /readyz) on instead of the API port, which then answers /metrics with 404"},
			&cli.StringFlag{Name: "metrics-token-file", EnvVars: envVars("metrics-token-file"),
				Usage: "file holding the bearer token GET /metrics must carry (the API token is accepted too); default: /metrics is open"},
			&cli.BoolFlag{Name: "enable-pprof", EnvVars: envVars("enable-pprof"),
				Usage: "serve Go runtime profiles under /debug/pprof/ on the API (behind the token)"},
			&cli.Uint64Flag{Name: "snapshot-every", Value: 10000, EnvVars: envVars("snapshot-every"),
				Usage: "applied entries before a state-machine snapshot (plus a random delay of up to half; a large state also waits for the log to hold half its size, more by the delay's share, up to 10x this; docs/OPERATIONS.md \"Snapshots\")"},
			&cli.Int64Flag{Name: "gc-headroom-bytes", Value: gcpace.DefaultHeadroom, EnvVars: envVars("gc-headroom-bytes"),
				Usage: "garbage the Go heap may hold above its live data before a collection: GOGC is lowered (down to 25) once the state is larger than this, so resident memory stays near the state's size; 0 leaves the runtime's pacing alone, and a GOGC environment variable overrides it (docs/OPERATIONS.md \"Memory\")"},
			&cli.BoolFlag{Name: "gc-release-when-quiet", Value: true, EnvVars: envVars("gc-release-when-quiet"),
				Usage: "with --gc-headroom-bytes: once writes stop (a second that allocated under 1/64 of the garbage held, at least half the headroom of it), collect and return the free memory to the system at once instead of holding it until the next collection (docs/OPERATIONS.md \"Memory\")"},
			&cli.BoolFlag{Name: "pace-procs", Value: true, EnvVars: envVars("pace-procs"),
				Usage: "run the controller's goroutines on one processor (GOMAXPROCS=1) while it is lightly loaded and on all of them once it is busy: on shared cores fewer thread wake-ups per write; a GOMAXPROCS environment variable overrides it (docs/OPERATIONS.md \"Processors\")"},
			&cli.Int64Flag{Name: "quota-bytes", Value: 2 << 30, EnvVars: envVars("quota-bytes"),
				Usage: "storage quota in bytes (as etcd's --quota-backend-bytes): past it, writes that add data get 507 no_space; reads and deletes work (docs/OPERATIONS.md)"},
			&cli.IntFlag{Name: "max-leases", Value: 100000, EnvVars: envVars("max-leases"),
				Usage: "most live leases; more grants get 429 too_many_leases"},
			&cli.DurationFlag{Name: "tick-interval", Value: 100 * time.Millisecond, EnvVars: envVars("tick-interval"),
				Usage: fmt.Sprintf("raft tick; an election timeout is %d ticks (randomized up to twice that), a heartbeat 1",
					roles.DefaultElectionTicks)},
			&cli.DurationFlag{Name: "request-timeout", Value: 5 * time.Second, EnvVars: envVars("request-timeout"),
				Usage: "how long a write or linearizable read may wait before answering 503 timeout"},
			&cli.IntFlag{Name: "http-max-conns", Value: 1024, EnvVars: envVars("http-max-conns"),
				Usage: "most connections the API accepts at once; more wait in the listen backlog"},
			&cli.DurationFlag{Name: "http-idle-timeout", Value: 2 * time.Minute, EnvVars: envVars("http-idle-timeout"),
				Usage: "close keep-alive connections idle this long"},
			&cli.DurationFlag{Name: "http-read-timeout", Value: 30 * time.Second, EnvVars: envVars("http-read-timeout"),
				Usage: "most time to read a request's headers and body (streams that read their body for long, lease keep-alive streams, are exempt)"},
			&cli.IntFlag{Name: "max-watches", Value: 10000, EnvVars: envVars("max-watches"),
				Usage: "most watches open on this controller at once; more are refused with 429 too_many_watches"},
			&cli.IntFlag{Name: "max-leases-per-token", Value: 10000, EnvVars: envVars("max-leases-per-token"),
				Usage: "most live leases one API token may hold (with ACLs on); more grants get 429 too_many_leases"},
			&cli.IntFlag{Name: "max-watches-per-token", Value: 1000, EnvVars: envVars("max-watches-per-token"),
				Usage: "most watches one API token may hold open on this controller (with ACLs on); more get 429 too_many_watches"},
		}, append(zkFlags(""), append(workerRunFlags(), logFlags()...)...)...),
		Action: runAction,
	}
}

// controllerConfig turns run's flags into a ControllerConfig, rejecting what cannot work with a message that says
// what to pass instead. It does not touch the disk or the network.
func controllerConfig(c *cli.Context) (roles.ControllerConfig, error) {
	var cfg roles.ControllerConfig
	if err := wantArgs(c, 0); err != nil {
		return cfg, err
	}
	switch role := c.String("role"); role {
	case "controller", "combined":
	case "worker":
		return cfg, errors.New("--role=worker runs no controller")
	case "":
		return cfg, errors.New("missing --role: use --role=controller, --role=worker or --role=combined")
	default:
		return cfg, fmt.Errorf("unknown --role %q: use controller, worker or combined", role)
	}
	if c.String("node-id") == "" {
		return cfg, errors.New("missing --node-id: give this controller's id as listed in --controllers, e.g. --node-id 1")
	}
	id, err := strconv.ParseUint(c.String("node-id"), 10, 64)
	if err != nil || id == 0 {
		return cfg, fmt.Errorf("invalid value %q for --node-id: a controller's id is a positive integer, as listed in --controllers", c.String("node-id"))
	}
	cfg.NodeID = id
	cfg.DataDir = c.String("data-dir")
	if cfg.DataDir == "" {
		return cfg, errors.New("missing --data-dir: where this controller keeps its raft log, e.g. --data-dir data/node1")
	}
	cfg.HTTPAddr = c.String("http-addr")
	if cfg.HTTPAddr == "" {
		return cfg, errors.New("missing --http-addr: where to serve the API, e.g. --http-addr 127.0.0.1:8080")
	}
	if cfg.Join = splitList(c.String("join")); len(cfg.Join) > 0 {
		if c.String("cluster-addr") == "" {
			return cfg, errors.New("--join needs --cluster-addr: the HOST:PORT other controllers reach this one on (the address given to 'corral controller add')")
		}
		cfg.Token = c.String("token")
	} else {
		if c.String("controllers") == "" {
			return cfg, errors.New("missing --controllers: list every controller as ID@HOST:PORT, " +
				"e.g. --controllers 1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003 (or --join to join a running cluster)")
		}
		peers, err := roles.ParsePeers(c.String("controllers"))
		if err != nil {
			return cfg, fmt.Errorf("bad --controllers: %w", err)
		}
		if _, ok := peers[cfg.NodeID]; !ok {
			return cfg, fmt.Errorf("--controllers does not list --node-id %d; add %d@HOST:PORT", cfg.NodeID, cfg.NodeID)
		}
		cfg.Peers = peers
	}
	cfg.TLSDir = c.String("tls-dir")
	if cfg.TLSDir == "" {
		return cfg, errors.New("missing --tls-dir: issue one with 'corral certs issue --ca-dir CA --role controller --id N --out DIR' (or 'corral certs create --dir DIR --id N' on a test machine)")
	}
	if c.String("join-token") != "" || c.String("ca-cert") != "" {
		return cfg, errors.New("--join-token and --ca-cert are for --role=worker: a controller (or combined node) runs with --tls-dir; give --ca-dir to let it sign joining workers' certificates")
	}
	cfg.CADir = c.String("ca-dir")
	cfg.ClusterAddr = c.String("cluster-addr")
	cfg.ClusterID = c.String("cluster-id")
	cfg.APITokenFile = c.String("api-token-file")
	cfg.HTTPInsecure = c.Bool("http-insecure")
	cfg.HTTPTLSCert, cfg.HTTPTLSKey = c.String("http-tls-cert"), c.String("http-tls-key")
	cfg.HTTPAllowedHosts = splitList(c.String("http-allowed-hosts"))
	cfg.HTTPAdvertiseAddr = c.String("http-advertise-addr") // checked by Validate
	cfg.MetricsAddr = c.String("metrics-addr")
	if cfg.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.MetricsAddr); err != nil {
			return cfg, fmt.Errorf("bad --metrics-addr %q: want HOST:PORT for the metrics listener, e.g. --metrics-addr 127.0.0.1:9090", cfg.MetricsAddr)
		}
	}
	cfg.MetricsTokenFile = c.String("metrics-token-file") // read (and checked) when the controller starts
	cfg.EnablePprof = c.Bool("enable-pprof")
	cfg.SnapshotEvery = c.Uint64("snapshot-every")
	if cfg.SnapshotEvery == 0 {
		return cfg, errors.New("--snapshot-every must be positive, e.g. 10000")
	}
	cfg.QuotaBytes, cfg.MaxLeases = c.Int64("quota-bytes"), c.Int("max-leases")
	if cfg.QuotaBytes <= 0 || cfg.MaxLeases <= 0 {
		return cfg, errors.New("--quota-bytes and --max-leases must be positive, e.g. --quota-bytes 2147483648 (2 GiB)")
	}
	cfg.TickInterval = c.Duration("tick-interval")
	if cfg.TickInterval <= 0 {
		return cfg, errors.New("--tick-interval must be positive, e.g. 100ms")
	}
	cfg.RequestTimeout = c.Duration("request-timeout")
	if cfg.RequestTimeout <= 0 {
		return cfg, errors.New("--request-timeout must be positive, e.g. 5s")
	}
	cfg.HTTPMaxConns = c.Int("http-max-conns")
	cfg.HTTPIdleTimeout = c.Duration("http-idle-timeout")
	cfg.HTTPReadTimeout = c.Duration("http-read-timeout")
	cfg.MaxWatches = c.Int("max-watches")
	if cfg.HTTPMaxConns <= 0 || cfg.HTTPIdleTimeout <= 0 || cfg.HTTPReadTimeout <= 0 || cfg.MaxWatches <= 0 {
		return cfg, errors.New("--http-max-conns, --http-idle-timeout, --http-read-timeout and --max-watches must be positive")
	}
	cfg.MaxLeasesPerToken, cfg.MaxWatchesPerToken = c.Int("max-leases-per-token"), c.Int("max-watches-per-token")
	if cfg.MaxLeasesPerToken <= 0 || cfg.MaxWatchesPerToken <= 0 {
		return cfg, errors.New("--max-leases-per-token and --max-watches-per-token must be positive, e.g. 10000 and 1000")
	}
	cfg.SessionTimeout = c.Duration("session-timeout")
	if cfg.SessionTimeout <= 0 {
		return cfg, errors.New("--session-timeout must be positive, e.g. 5s")
	}
	cfg.ZK = zkConfig(c)
	cfg.Logger, err = newLogger(c, c.App.ErrWriter)
	return cfg, err
}

func runAction(c *cli.Context) error {
	if c.String("role") == "worker" {
		wcfg, err := workerConfig(c, false)
		if err != nil {
			return err
		}
		ctx, stop := signalContext(c.Context)
		defer stop()
		wcfg.JoinContext = ctx // a join in progress ends on SIGINT or SIGTERM
		reload, stopHangups := hangupReloads()
		defer stopHangups()
		if err := roles.RunWorker(ctx, wcfg, roles.ReloadTLSOn(reload)); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		return nil
	}
	cfg, err := controllerConfig(c)
	if err != nil {
		return err
	}
	headroom := c.Int64("gc-headroom-bytes")
	if headroom < 0 {
		return errors.New("--gc-headroom-bytes must be 0 (off) or a positive number of bytes, e.g. 134217728 (128 MiB)")
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	// A release of garbage returns pages on the runtime's system stack,
	// unpreemptible: it runs with all Ps so that it stalls nothing else
	// (procpace.Holds).
	holds := &procpace.Holds{}
	if headroom > 0 && gcpace.Wanted(os.Getenv) {
		go gcpace.Run(ctx, gcpace.Config{Headroom: uint64(headroom), NoRelease: !c.Bool("gc-release-when-quiet"),
			Logger: cfg.Logger, Release: func() {
				defer holds.Hold()()
				debug.FreeOSMemory()
			}})
	}
	if c.Bool("pace-procs") && procpace.Wanted(os.Getenv) {
		go procpace.Run(ctx, procpace.Config{Logger: cfg.Logger, Holds: holds})
	}
	reload, stopHangups := hangupReloads()
	defer stopHangups()
	if c.String("role") == "combined" {
		wcfg, err := workerConfig(c, true)
		if err != nil {
			return err
		}
		if err := roles.RunCombined(ctx, cfg, wcfg, roles.ReloadTLSOn(reload)); err != nil {
			return fmt.Errorf("combined node %d: %w", cfg.NodeID, err)
		}
		return nil
	}
	if err := roles.RunController(ctx, cfg, roles.ReloadTLSOn(reload)); err != nil {
		return fmt.Errorf("controller %d: %w", cfg.NodeID, err)
	}
	return nil
}

// signalContext is cancelled on SIGINT or SIGTERM so that nodes shut down cleanly (raft log synced, HTTP drained).
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// hangupReloads asks for a TLS reload (the returned channel delivers) on
// every SIGHUP until stop is called. It takes SIGHUP over at once, so a
// hangup while the node starts is a reload request, not the end of the
// process; SIGINT and SIGTERM are left to signalContext.
func hangupReloads() (reload <-chan struct{}, stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP)
	ch := make(chan struct{}, 1)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		forwardHangups(quit, sigs, ch)
	}()
	return ch, func() {
		signal.Stop(sigs)
		close(quit)
		<-done
	}
}

// forwardHangups turns every SIGHUP read from sigs into a request on
// reload until quit closes; other signals are ignored. Requests coalesce:
// while one is pending (the node has not taken it yet), more SIGHUPs add
// nothing, since the one reload will read the newest files anyway.
func forwardHangups(quit <-chan struct{}, sigs <-chan os.Signal, reload chan<- struct{}) {
	for {
		select {
		case <-quit:
			return
		case sig := <-sigs:
			if sig != syscall.SIGHUP {
				continue
			}
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}
}
