package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

func (e Env) workersCommand() *cli.Command {
	return &cli.Command{
		Name:  "workers",
		Usage: "run simulated workers against a running quorum and report heartbeat throughput, latency and fencings",
		Description: "Each simulated worker is the real worker code with its own QUIC session to the leader. Workers\n" +
			"start spread over --ramp, then heartbeats are measured for --duration. The leader's CPU and\n" +
			"resident memory come from /proc/<pid> when the leader runs on this machine (its pid is in\n" +
			"GET /v1/cluster). Example, against scripts/cluster.sh start:\n" +
			"   corral bench workers --endpoints http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083 \\\n" +
			"     --controllers 127.0.0.1:7081,127.0.0.1:7082,127.0.0.1:7083 --tls-dir /tmp/corral-cluster/tls \\\n" +
			"     --workers 1000 --duration 30s\n" +
			"--tls-dir must hold a controller certificate (scripts/cluster.sh issues one there): the simulated\n" +
			"workers share it, and a worker certificate may speak only for the one worker it names.\n" +
			"With --kill-leader-every the leader is killed (SIGKILL) that often while measuring, --kills times, and\n" +
			"restarted with the same command line, working directory and environment (so it must run on this\n" +
			"machine); the report says, per kill, how long each worker took to get a heartbeat acknowledged by the\n" +
			"new leader and whether any was fenced or registered again, and the command fails if one was:\n" +
			"   corral bench workers <the flags above> --workers 1000 --duration 40s --kill-leader-every 10s --kills 3",
		Flags: append(append(e.ClientFlags(),
			&cli.StringFlag{Name: "controllers", EnvVars: e.EnvVars("controllers"),
				Usage: "the controllers' cluster (QUIC) addresses, HOST:PORT,..."},
			&cli.StringFlag{Name: "tls-dir", EnvVars: e.EnvVars("tls-dir"),
				Usage: "directory with the cluster CA and a node certificate"},
			&cli.IntFlag{Name: "workers", Value: 1000, EnvVars: e.EnvVars("workers"), Usage: "simulated workers"},
			&cli.DurationFlag{Name: "duration", Value: 30 * time.Second, EnvVars: e.EnvVars("duration"),
				Usage: "how long to measure once every worker is alive"},
			&cli.DurationFlag{Name: "heartbeat-interval", Value: roles.DefaultHeartbeatInterval,
				EnvVars: e.EnvVars("heartbeat-interval"), Usage: "each worker's heartbeat interval"},
			&cli.DurationFlag{Name: "ramp", EnvVars: e.EnvVars("ramp"),
				Usage: "spread worker starts over this long (default: 10ms per worker, at least 1s): TLS handshakes are the costly part"},
			&cli.IntFlag{Name: "workers-per-socket", Value: 250, EnvVars: e.EnvVars("workers-per-socket"),
				Usage: "simulated workers sharing one UDP socket (each still has its own QUIC connection)"},
			&cli.StringFlag{Name: "id-prefix", Value: "bench-", EnvVars: e.EnvVars("id-prefix"),
				Usage: "worker ids are PREFIX0, PREFIX1, ..."},
			&cli.StringFlag{Name: "log-level", Value: "error", EnvVars: e.EnvVars("log-level"),
				Usage: "simulated workers' log level: debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: e.EnvVars("log-format"), Usage: "text or json"},
			&cli.StringFlag{Name: "pprof-addr", EnvVars: e.EnvVars("pprof-addr"),
				Usage: "serve this process's Go profiles on HOST:PORT under /debug/pprof/ (to see what the simulated side costs)"},
		), e.failoverFlags()...),
		Action: e.workersAction,
	}
}

type benchWorkersConfig struct {
	controllers []string
	tlsDir      string
	workers     int
	duration    time.Duration
	interval    time.Duration
	ramp        time.Duration
	perSocket   int
	prefix      string
	failover    failoverConfig // --kill-leader-every, --kills (workers_failover.go)
}

func (e Env) parseWorkers(c *cli.Context) (benchWorkersConfig, error) {
	cfg := benchWorkersConfig{tlsDir: c.String("tls-dir"), workers: c.Int("workers"), duration: c.Duration("duration"),
		interval: c.Duration("heartbeat-interval"), ramp: c.Duration("ramp"), perSocket: c.Int("workers-per-socket"),
		prefix: c.String("id-prefix")}
	var err error
	if cfg.controllers, err = e.ParseControllers(c.String("controllers")); err != nil {
		return cfg, err
	}
	switch {
	case cfg.tlsDir == "":
		return cfg, errors.New("missing --tls-dir: the cluster CA and a controller certificate (e.g. /tmp/corral-cluster/tls from scripts/cluster.sh)")
	case cfg.workers < 1 || cfg.workers > 100000:
		return cfg, fmt.Errorf("--workers must be between 1 and 100000, got %d", cfg.workers)
	case cfg.duration <= 0:
		return cfg, fmt.Errorf("--duration must be positive, got %s", cfg.duration)
	case cfg.interval <= 0:
		return cfg, fmt.Errorf("--heartbeat-interval must be positive, got %s", cfg.interval)
	case cfg.perSocket < 1:
		return cfg, fmt.Errorf("--workers-per-socket must be at least 1, got %d", cfg.perSocket)
	case cfg.ramp < 0:
		return cfg, fmt.Errorf("--ramp must not be negative, got %s", cfg.ramp)
	}
	if err := roles.ValidateWorkerID(cfg.prefix + "0"); err != nil {
		return cfg, fmt.Errorf("bad --id-prefix: %w", err)
	}
	if cfg.ramp == 0 {
		cfg.ramp = max(time.Duration(cfg.workers)*10*time.Millisecond, time.Second)
	}
	cfg.failover, err = parseFailover(c.Duration("kill-leader-every"), c.Int("kills"), c.IsSet("kills"), cfg.duration)
	return cfg, err
}

// simWorker records one simulated worker's round trips while measuring.
type simWorker struct {
	w       *roles.Worker
	mu      sync.Mutex
	rtt     []time.Duration
	session simSession // what its session went through (workers_failover.go)
}

// benchRun is the shared state of one bench workers run.
type benchRun struct {
	measuring atomic.Bool
	fenced    atomic.Int64 // OnFenced calls after the worker was first alive
	alive     atomic.Int64
}

func (e Env) workersAction(c *cli.Context) error {
	if err := e.WantArgs(c, 0); err != nil {
		return err
	}
	cfg, err := e.parseWorkers(c)
	if err != nil {
		return err
	}
	out := c.App.Writer
	ctx, stop := signalContext(c.Context)
	defer stop()
	if addr := c.String("pprof-addr"); addr != "" {
		closePprof, err := servePprof(addr)
		if err != nil {
			return err
		}
		defer closePprof()
	}
	lead, err := e.findLeader(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "bench workers: %d workers, heartbeat every %s, ramp %s, measure %s; leader %d (pid %d, %s)\n",
		cfg.workers, cfg.interval, cfg.ramp, cfg.duration, lead.id, lead.pid, lead.locality())
	if cfg.failover.on() {
		if err := checkKillable(lead); err != nil {
			return err
		}
		fmt.Fprintf(out, "failover: killing the leader %d times, every %s, while measuring\n", cfg.failover.kills,
			cfg.failover.every)
	}
	before := lead.sample()

	bundle, err := transport.LoadTLSDir(cfg.tlsDir)
	if err != nil {
		return fmt.Errorf("load TLS files: %w", err)
	}
	dir, err := os.MkdirTemp("", "corral-bench-workers-")
	if err != nil {
		return fmt.Errorf("create scratch dir: %w", err)
	}
	defer os.RemoveAll(dir)
	// The leader first: a worker that dials a follower is redirected anyway.
	ctrls := cfg.controllers
	if lead.clusterAddr != "" {
		ctrls = append([]string{lead.clusterAddr}, without(cfg.controllers, lead.clusterAddr)...)
	}
	var dialers []transport.StreamDialer
	defer func() {
		for _, d := range dialers {
			_ = d.Close()
		}
	}()
	run := &benchRun{}
	sims := make([]*simWorker, 0, cfg.workers)
	logger, err := e.NewLogger(c, c.App.ErrWriter)
	if err != nil {
		return err
	}
	rampStart := time.Now()
	for i := range cfg.workers {
		if ctx.Err() != nil {
			break
		}
		if i%cfg.perSocket == 0 {
			d, err := roles.NewWorkerDialer(bundle, logger, cfg.interval)
			if err != nil {
				return err
			}
			dialers = append(dialers, d)
		}
		sim, err := startSimWorker(run, cfg, fmt.Sprintf("%s%d", cfg.prefix, i), filepath.Join(dir, strconv.Itoa(i)),
			ctrls, dialers[len(dialers)-1], logger)
		if err != nil {
			closeSims(sims)
			return err
		}
		sims = append(sims, sim)
		// Pace the starts: TLS handshakes are the expensive part.
		if wait := time.Until(rampStart.Add(cfg.ramp * time.Duration(i+1) / time.Duration(cfg.workers))); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}
	defer closeSims(sims)
	allAlive := waitAllAlive(ctx, run, cfg.workers, cfg.ramp+30*time.Second)
	fmt.Fprintf(out, "ramp: %d of %d workers alive after %s\n", run.alive.Load(), cfg.workers,
		time.Since(rampStart).Round(100*time.Millisecond))
	rampDrops := readSocketDrops(dialers, cfg.controllers)
	fmt.Fprintln(out, rampDrops.report("during the ramp", socketDrops{}))
	if !allAlive {
		if rampDrops.simulatorStarved(socketDrops{}) {
			fmt.Fprintln(out, simulatorStarvedNote)
		}
		return fmt.Errorf("only %d of %d workers became alive; see the controllers' logs", run.alive.Load(), cfg.workers)
	}

	fencedBefore := run.fenced.Load()
	selfStart := readProcStats(os.Getpid())
	start := lead.sample()
	run.measuring.Store(true)
	t0 := time.Now()
	var killer *leaderKiller
	if cfg.failover.on() {
		killer = e.newLeaderKiller(c, cfg.failover)
		killer.standbys = func() string { return standbyCounts(sims) }
		killer.killAll(ctx, t0)
	}
	select {
	case <-time.After(time.Until(t0.Add(cfg.duration))):
	case <-ctx.Done():
	}
	run.measuring.Store(false)
	elapsed := time.Since(t0)
	end := lead.sample()
	self := readProcStats(os.Getpid())
	endDrops := readSocketDrops(dialers, cfg.controllers)

	var rtts [][]time.Duration
	for _, s := range sims {
		s.mu.Lock()
		rtts = append(rtts, s.rtt)
		s.mu.Unlock()
	}
	all := mergeLatencies(rtts)
	r := benchWorkersResult{workers: cfg.workers, elapsed: elapsed, acked: len(all), rtt: all,
		falseFencings: run.fenced.Load() - fencedBefore, fencedDuringRamp: fencedBefore,
		leaderFencings: end.fencings - start.fencings, before: before, start: start, end: end, self: self,
		leaderHeartbeats: end.heartbeats - start.heartbeats, leaderChanged: end.leaderID != lead.id, selfStart: selfStart,
		leaderKilled: killer != nil}
	fmt.Fprintln(out, endDrops.report("while measuring", rampDrops))
	if endDrops.simulatorStarved(rampDrops) {
		fmt.Fprintln(out, simulatorStarvedNote)
	}
	err = r.print(out)
	if killer != nil {
		err = errors.Join(err, killer.finish(ctx, sims, t0, t0.Add(elapsed)))
	}
	return err
}

func without(list []string, x string) []string {
	var out []string
	for _, s := range list {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

func startSimWorker(run *benchRun, cfg benchWorkersConfig, id, dataDir string, ctrls []string,
	d transport.StreamDialer, logger *slog.Logger) (*simWorker, error) {
	return startSimWorkerWith(run, cfg, id, dataDir, ctrls, d, logger, false)
}

// startSimWorkerWith starts one simulated worker; simulate makes it
// acknowledge allocations without running processes (bench schedule).
func startSimWorkerWith(run *benchRun, cfg benchWorkersConfig, id, dataDir string, ctrls []string,
	d transport.StreamDialer, logger *slog.Logger, simulate bool) (*simWorker, error) {
	sim := &simWorker{}
	var wasAlive atomic.Bool
	// Its own small registry: the default one would add Go runtime collectors per simulated worker.
	reg := prometheus.NewRegistry()
	w, err := roles.StartWorker(roles.WorkerConfig{
		ID: id, DataDir: dataDir, Controllers: ctrls, HeartbeatInterval: cfg.interval, Dialer: d, Logger: logger,
		CPUMillis: 4000, MemoryMB: 8192, Labels: map[string]string{"bench": "true"}, Simulate: simulate,
		Registry: reg,
		Load:     func() transport.WorkerLoad { return transport.WorkerLoad{CPUMillis: 500, MemoryMB: 1024} },
		OnAlive: func(epoch uint64) {
			if !wasAlive.Swap(true) {
				run.alive.Add(1)
			}
			sim.session.onAlive(epoch)
		},
		OnFenced: func(uint64) {
			run.fenced.Add(1)
			sim.session.onFenced(reg)
		},
		OnLeaderAck: sim.session.onLeaderAck,
		OnHeartbeatAck: func(rtt time.Duration) {
			if run.measuring.Load() {
				sim.mu.Lock()
				sim.rtt = append(sim.rtt, rtt)
				sim.mu.Unlock()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start simulated worker %s: %w", id, err)
	}
	sim.w = w
	return sim, nil
}

// closeSims makes every simulated worker leave, many at a time.
func closeSims(sims []*simWorker) {
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	for _, s := range sims {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_ = s.w.Close()
		})
	}
	wg.Wait()
}

func waitAllAlive(ctx context.Context, run *benchRun, n int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if run.alive.Load() >= int64(n) {
			return true
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return run.alive.Load() >= int64(n)
}

// benchLeader is the leader controller as the benchmark found it.
type benchLeader struct {
	id          uint64
	pid         int
	endpoint    string
	clusterAddr string
	local       bool
	hc          *http.Client
	token       string
	cl          *client.Client
}

func (l *benchLeader) locality() string {
	if l.local {
		return "local: CPU and memory measured"
	}
	return "remote: CPU and memory not measured"
}

// findLeader asks each endpoint until one says it is the leader.
func (e Env) findLeader(ctx context.Context, c *cli.Context) (*benchLeader, error) {
	eps := splitList(c.String("endpoints"))
	var lastErr error
	for _, ep := range eps {
		cl, err := client.New(client.Config{Endpoints: []string{ep}, Token: c.String("token"), Timeout: c.Duration("timeout")})
		if err != nil {
			return nil, fmt.Errorf("bad --endpoints: %w", err)
		}
		st, err := cl.Cluster(ctx)
		if err != nil {
			lastErr = err
			continue
		}
		if st.LeaderID == 0 || st.NodeID != st.LeaderID {
			continue
		}
		l := &benchLeader{id: st.LeaderID, pid: st.PID, endpoint: cl.Endpoints()[0], hc: &http.Client{Timeout: 10 * time.Second},
			token: c.String("token"), cl: cl}
		for _, ct := range st.Controllers {
			if ct.ID == st.LeaderID {
				l.clusterAddr = ct.Address
			}
		}
		l.local = isLocalEndpoint(l.endpoint) && isCorralProcess(l.pid)
		return l, nil
	}
	if lastErr != nil {
		return nil, e.Explain("find the leader among --endpoints", lastErr)
	}
	return nil, fmt.Errorf("none of --endpoints %v is the leader: list every controller's API URL", eps)
}

// isLocalEndpoint reports whether the endpoint's host is an address of this machine.
func isLocalEndpoint(ep string) bool {
	u, err := url.Parse(ep)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// isCorralProcess guards against a pid from another machine that happens to exist here.
func isCorralProcess(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), "corral")
}

// leaderSample is the leader's counters and resources at one moment.
type leaderSample struct {
	at         time.Time
	leaderID   uint64
	heartbeats float64
	fencings   float64
	proc       procStats
}

func (l *benchLeader) sample() leaderSample {
	s := leaderSample{at: time.Now(), leaderID: l.id}
	if st, err := l.cl.Cluster(context.Background()); err == nil {
		s.leaderID = st.LeaderID
	}
	if m, err := l.metrics(); err == nil {
		s.heartbeats = m["corral_workers_heartbeats_total"]
		s.fencings = m[`corral_workers_fencings_total{reason="session_timeout"}`]
	}
	if l.local {
		s.proc = readProcStats(l.pid)
	}
	return s
}

// metrics fetches the leader's /metrics and returns the value of every sample line.
func (l *benchLeader) metrics() (map[string]float64, error) {
	req, err := http.NewRequest(http.MethodGet, l.endpoint+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(client.ClientHeader, "corral-bench")
	if l.token != "" {
		req.Header.Set("Authorization", "Bearer "+l.token)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch leader metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// procStats is a process's CPU time and resident memory from /proc.
type procStats struct {
	ok       bool
	cpu      time.Duration
	rssBytes int64
}

func readProcStats(pid int) procStats {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStats{}
	}
	// Fields after the command name (which may contain spaces) start after ")".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStats{}
	}
	f := strings.Fields(string(b)[i+1:])
	// f[0] is field 3 (state); utime, stime are fields 14, 15; rss (pages) is field 24.
	if len(f) < 22 {
		return procStats{}
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	rss, err3 := strconv.ParseInt(f[21], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStats{}
	}
	const clkTck = 100 // USER_HZ on Linux
	return procStats{ok: true, cpu: time.Duration(utime+stime) * time.Second / clkTck, rssBytes: rss * int64(os.Getpagesize())}
}

type benchWorkersResult struct {
	workers          int
	elapsed          time.Duration
	acked            int
	rtt              []time.Duration
	falseFencings    int64
	fencedDuringRamp int64
	leaderFencings   float64
	leaderHeartbeats float64
	leaderChanged    bool
	leaderKilled     bool // --kill-leader-every: the leader's own figures mean nothing
	before           leaderSample
	start            leaderSample
	end              leaderSample
	self             procStats
	selfStart        procStats
}

func (r benchWorkersResult) print(w io.Writer) error {
	secs := r.elapsed.Seconds()
	per1k := float64(r.workers) / 1000
	if r.leaderKilled {
		fmt.Fprintf(w, "heartbeats/s acknowledged to workers: %.0f (the leaders' own counts are not comparable across kills)\n",
			float64(r.acked)/secs)
	} else {
		fmt.Fprintf(w, "heartbeats/s handled by the leader: %.0f (acknowledged to workers: %.0f/s)\n",
			r.leaderHeartbeats/secs, float64(r.acked)/secs)
	}
	var maxRTT time.Duration
	if len(r.rtt) > 0 {
		maxRTT = r.rtt[len(r.rtt)-1]
	}
	fmt.Fprintf(w, "heartbeat round trip: p50 %s, p99 %s, max %s (%d samples)\n", formatLatency(percentile(r.rtt, 50)),
		formatLatency(percentile(r.rtt, 99)), formatLatency(maxRTT), len(r.rtt))
	if r.leaderKilled {
		fmt.Fprintf(w, "false fencings: %d while measuring (workers that stopped being alive), %d during the ramp\n",
			r.falseFencings, r.fencedDuringRamp)
	} else {
		fmt.Fprintf(w, "false fencings: %d while measuring (workers that stopped being alive), %d during the ramp; leader fenced %.0f\n",
			r.falseFencings, r.fencedDuringRamp, r.leaderFencings)
	}
	if r.leaderKilled {
		fmt.Fprintln(w, "leader CPU and RSS: not measured (the leader was killed during the run)")
	} else if r.start.proc.ok && r.end.proc.ok {
		cpu := (r.end.proc.cpu - r.start.proc.cpu).Seconds() / secs
		fmt.Fprintf(w, "leader CPU: %.1f%% of one core (%.2f%% per 1,000 workers)\n", 100*cpu, 100*cpu/per1k)
		rss := float64(r.end.proc.rssBytes) / (1 << 20)
		grown := float64(r.end.proc.rssBytes-r.before.proc.rssBytes) / (1 << 20)
		fmt.Fprintf(w, "leader RSS: %.0f MiB (%+.0f MiB since before the workers: %.1f MiB per 1,000 workers)\n",
			rss, grown, grown/per1k)
	} else {
		fmt.Fprintln(w, "leader CPU and RSS: not measured (the leader is not a local process)")
	}
	if r.self.ok && r.selfStart.ok {
		fmt.Fprintf(w, "this process (all simulated workers): CPU %.1f%% of one core, RSS %.0f MiB\n",
			100*(r.self.cpu-r.selfStart.cpu).Seconds()/secs, float64(r.self.rssBytes)/(1<<20))
	}
	if r.leaderChanged && !r.leaderKilled {
		fmt.Fprintln(w, "WARNING: the leader changed during the run; the leader figures are not meaningful")
	}
	if r.falseFencings > 0 {
		return fmt.Errorf("%d live workers were fenced", r.falseFencings)
	}
	return nil
}

// standbyCounts says how many simulated workers hold a standby connection to each controller, e.g.
// "127.0.0.1:7081=998 127.0.0.1:7082=1000".
func standbyCounts(sims []*simWorker) string {
	n := map[string]int{}
	for _, s := range sims {
		for _, a := range s.w.Status().Standbys {
			n[a]++
		}
	}
	parts := make([]string, 0, len(n))
	for a, c := range n {
		parts = append(parts, fmt.Sprintf("%s=%d", a, c))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
