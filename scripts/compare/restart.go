package main

// compare restart: how long a whole 3-node cluster takes, once loaded with N
// keys, to serve again after all its nodes are stopped and started, and what
// the keys cost in memory (issue 21, items 3 and 4; docs/PERFORMANCE.md "A
// million keys"), for corral, etcd and ZooKeeper in the same run.
// scripts/compare.sh restart starts the three clusters and calls it.
//
//	compare restart -keys 1000000 -trials 3 -corral URL,URL,URL -etcd H:P,... -zk H:P,...
//
//  1. Load, each system in turn: RSS of every node (/proc/PID/status VmRSS),
//     N distinct keys of 256 bytes written by 64 writers (corral PUT, etcd
//     Put, ZooKeeper create of N znodes under /restart), a short settle,
//     RSS again. Bytes per key is (RSS after - RSS before) / N, averaged
//     over the three nodes: every node holds every key.
//  2. Restarts, trial by trial, the systems in turn within a trial (as
//     compare failover does, so that drift on this shared machine hits all
//     three alike): wait until the cluster is healthy, read each node's
//     argv, working directory and environment from /proc, SIGTERM all three
//     (or SIGKILL with -signal KILL) and wait until they are gone, start
//     all three again the same way, and time from that start to the first
//     linearizable read of a loaded key (corral GET, etcd Get, ZooKeeper
//     sync + getData) and, independently, to the first write.
//
// The first read and write are polled with a fresh client per attempt: a
// client kept across the restart would add its own reconnect backoff
// (gRPC's 1 s and growing, go-zookeeper's 1 s after trying every server) to
// the server's time. For the same reason an etcd attempt redials within
// 50 ms, and a ZooKeeper attempt (the protocol spoken directly, see
// zkProbe) tries each server once and gives up.
// A new attempt starts every -poll (at most -in-flight at once, each with
// its own -attempt-timeout), so an attempt stuck on a node that is not
// ready does not hide a node that became ready meanwhile; the figure is
// when the first successful attempt returned. -trace prints every attempt.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// restartSystem is one of the three clusters under test.
type restartSystem interface {
	name() string
	// endpoints has one client endpoint per node, to find the node's process (listenerPID).
	endpoints() []string
	// health is a fresh health checker (its clients made now, not before the restart); close it after use.
	health() (gapSystem, error)
	// prepare creates what the load and the probes need (ZooKeeper: the parent znode and the write probe's znode).
	prepare(ctx context.Context, value []byte) error
	// openLoad connects the load's clients; put writes key i (of n) with value, from writer w.
	openLoad() (put func(ctx context.Context, w, i int, value []byte) error, closeLoad func(), err error)
	// read is one linearizable read of key 0 through a client made for this attempt; it fails unless the value has
	// the loaded size.
	read(ctx context.Context, valueSize int) error
	// write is one write of the probe key through a client made for this attempt.
	write(ctx context.Context, value []byte) error
}

type restartConfig struct {
	keys, trials, writers int
	valueSize             int
	tries                 int
	putTimeout            time.Duration
	poll, attemptTimeout  time.Duration
	inFlight              int
	within                time.Duration // how long the first read and write may take after the start
	stopWithin            time.Duration
	healthyWithin         time.Duration
	settle                time.Duration
	quiet                 quietFlags // before each trial (quiet.go)
	snapWindows           int        // corral only, after the trials (snapwin.go); 0: none
	snapWindow            time.Duration
	snapWriters           int
	signal                string // TERM or KILL
	trace                 bool
	corral, etcdEP, zkEP  string
	pidFile, jsonFile     string
}

// parseRestartArgs reads compare restart's flags; see runRestart.
func parseRestartArgs(args []string) (restartConfig, error) {
	flags := flag.NewFlagSet("compare restart", flag.ContinueOnError)
	var c restartConfig
	flags.IntVar(&c.keys, "keys", 1000000, "distinct keys to load")
	flags.IntVar(&c.trials, "trials", 3, "restarts per system")
	flags.IntVar(&c.writers, "writers", 64, "concurrent writers of the load")
	flags.IntVar(&c.valueSize, "value-size", 256, "bytes per value")
	flags.IntVar(&c.tries, "tries", 5, "attempts per key of the load before it gives up")
	flags.DurationVar(&c.putTimeout, "put-timeout", 10*time.Second, "timeout of each write of the load")
	flags.DurationVar(&c.poll, "poll", 10*time.Millisecond, "after a restart, start a new read (and write) attempt this often")
	flags.DurationVar(&c.attemptTimeout, "attempt-timeout", 500*time.Millisecond, "timeout of each attempt after a restart")
	// 8: with 32 a smoke run had 64 fresh etcd clients reconnecting at once to nodes that had just started on this
	// 2-core machine, and no earlier first read for it.
	flags.IntVar(&c.inFlight, "in-flight", 8, "most read (and write) attempts outstanding at once after a restart")
	flags.DurationVar(&c.within, "restart-within", 120*time.Second, "give up on the first read or write after this long")
	flags.DurationVar(&c.stopWithin, "stop-within", 120*time.Second, "how long the stopped nodes may take to exit")
	flags.DurationVar(&c.healthyWithin, "healthy-within", 120*time.Second, "how long a cluster may take to become healthy")
	flags.DurationVar(&c.settle, "settle", 5*time.Second, "pause after the load and after each restart before RSS is read")
	c.quiet.register(flags, "before each trial, sync and", time.Minute)
	flags.IntVar(&c.snapWindows, "snapshot-windows", 0, "after the trials, corral's p99 in this many windows of writes, marking those a snapshot may overlap (issue 21 item 5; 0: skip)")
	flags.DurationVar(&c.snapWindow, "snapshot-window", 3*time.Second, "length of each such window")
	flags.IntVar(&c.snapWriters, "snapshot-writers", 16, "writers during the snapshot windows")
	flags.StringVar(&c.signal, "signal", "TERM", "how the nodes are stopped: TERM (and wait for them to exit) or KILL (kill -9)")
	flags.StringVar(&c.corral, "corral", "", "corral's HTTP endpoints, comma-separated (empty: skip corral)")
	flags.StringVar(&c.etcdEP, "etcd", "", "etcd's client endpoints host:port, comma-separated (empty: skip etcd)")
	flags.StringVar(&c.zkEP, "zk", "", "ZooKeeper's client endpoints host:port, comma-separated (empty: skip ZooKeeper)")
	flags.StringVar(&c.pidFile, "pid-file", "", "append the pid of every node this run starts to this file (for the caller's cleanup)")
	flags.StringVar(&c.jsonFile, "json", "", "also write every result as JSON to this file")
	flags.BoolVar(&c.trace, "trace", false, "print every attempt after a restart (start, end, error) to stderr")
	if err := flags.Parse(args); err != nil {
		return c, err
	}
	if flags.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", flags.Arg(0))
	}
	switch {
	case c.keys < 1 || c.keys > 10000000:
		return c, fmt.Errorf("-keys: want 1-10,000,000, got %d", c.keys)
	case c.trials < 1 || c.trials > 100:
		return c, fmt.Errorf("-trials: want 1-100, got %d", c.trials)
	case c.writers < 1 || c.writers > 1024:
		return c, fmt.Errorf("-writers: want 1-1024, got %d", c.writers)
	case c.valueSize < 1 || c.valueSize > 1<<20:
		return c, fmt.Errorf("-value-size: want 1 byte to 1 MiB, got %d", c.valueSize)
	case c.tries < 1 || c.tries > 100:
		return c, fmt.Errorf("-tries: want 1-100, got %d", c.tries)
	case c.putTimeout <= 0 || c.putTimeout > time.Minute:
		return c, fmt.Errorf("-put-timeout: want up to 1m, got %s", c.putTimeout)
	case c.poll < time.Millisecond || c.poll > time.Second:
		return c, fmt.Errorf("-poll: want 1ms-1s, got %s", c.poll)
	case c.attemptTimeout < 10*time.Millisecond || c.attemptTimeout > 10*time.Second:
		return c, fmt.Errorf("-attempt-timeout: want 10ms-10s, got %s", c.attemptTimeout)
	case c.inFlight < 1 || c.inFlight > 64:
		return c, fmt.Errorf("-in-flight: want 1-64, got %d", c.inFlight)
	case c.within < time.Second || c.within > 10*time.Minute:
		return c, fmt.Errorf("-restart-within: want 1s-10m, got %s", c.within)
	case c.stopWithin < time.Second || c.stopWithin > 10*time.Minute:
		return c, fmt.Errorf("-stop-within: want 1s-10m, got %s", c.stopWithin)
	case c.healthyWithin < time.Second || c.healthyWithin > 10*time.Minute:
		return c, fmt.Errorf("-healthy-within: want 1s-10m, got %s", c.healthyWithin)
	case c.settle < 0 || c.settle > 5*time.Minute:
		return c, fmt.Errorf("-settle: want up to 5m, got %s", c.settle)
	case c.quiet.check() != nil:
		return c, c.quiet.check()
	case c.snapWindows < 0 || c.snapWindows > 1000 || c.snapWindow < 100*time.Millisecond || c.snapWindow > time.Minute ||
		c.snapWriters < 1 || c.snapWriters > 1024:
		return c, fmt.Errorf("-snapshot-windows: want 0-1000 windows of 100ms-1m with 1-1024 writers")
	case c.signal != "TERM" && c.signal != "KILL":
		return c, fmt.Errorf("-signal: want TERM or KILL, got %q", c.signal)
	case c.corral == "" && c.etcdEP == "" && c.zkEP == "":
		return c, errors.New("give at least one of -corral, -etcd, -zk")
	}
	return c, nil
}

// nodeRSS is one node's resident memory around the load.
type nodeRSS struct {
	Endpoint  string  `json:"endpoint"`
	PID       int     `json:"pid"`
	BeforeMiB float64 `json:"rss_before_load_mib"`
	AfterMiB  float64 `json:"rss_after_load_mib"`
}

// restartTrial is one stop and start of all three nodes of one system.
type restartTrial struct {
	Trial  int     `json:"trial"`
	Signal string  `json:"signal"`
	StopMS float64 `json:"stop_ms"` // from the signal until all three processes were gone
	// ReadMS and WriteMS run from the start of the first node to the return of the first successful attempt.
	ReadMS        float64 `json:"read_ms"`
	ReadOK        bool    `json:"read_ok"`
	ReadAttempts  int     `json:"read_attempts"`
	ReadLastErr   string  `json:"read_last_error,omitempty"` // the last failure before the first success, or the reason none came
	WriteMS       float64 `json:"write_ms"`
	WriteOK       bool    `json:"write_ok"`
	WriteAttempts int     `json:"write_attempts"`
	WriteLastErr  string  `json:"write_last_error,omitempty"`
	// HealthyMS: from the start until every node answered and agreed on one leader, checked only once the first
	// read and write are in (so never less than they are).
	HealthyMS float64 `json:"healthy_ms"`
	// Quiet is how idle the machine was just before the stop (after a sync), and how long that took (quiet.go).
	Quiet       quietResult `json:"quiet"`
	PIDs        []int       `json:"pids"` // the new processes
	RSSAfterMiB []float64   `json:"rss_after_restart_mib"`
	LoadAvg     string      `json:"loadavg"`
	Error       string      `json:"error,omitempty"`
}

// restartRun is everything measured for one system.
type restartRun struct {
	System      string         `json:"system"`
	Endpoints   []string       `json:"endpoints"`
	Keys        int            `json:"keys"`
	Loaded      int            `json:"loaded"`
	LoadRetries int            `json:"load_retries"`
	LoadSeconds float64        `json:"load_seconds"`
	LoadPerS    float64        `json:"load_keys_per_s"`
	Nodes       []nodeRSS      `json:"nodes"`
	BytesPerKey float64        `json:"bytes_per_key"`
	Trials      []restartTrial `json:"trials"`
	SnapWindows []snapWindow   `json:"snapshot_windows,omitempty"`
	SnapWriters int            `json:"snapshot_writers,omitempty"`
	Error       string         `json:"error,omitempty"`

	sys restartSystem
}

type restartReport struct {
	Start     time.Time     `json:"start"`
	Keys      int           `json:"keys"`
	ValueSize int           `json:"value_size"`
	Writers   int           `json:"writers"`
	Trials    int           `json:"trials"`
	Signal    string        `json:"signal"`
	PollMS    float64       `json:"poll_ms"`
	AttemptMS float64       `json:"attempt_timeout_ms"`
	WithinS   float64       `json:"restart_within_s"`
	Systems   []*restartRun `json:"systems"`
}

func runRestart(args []string) error {
	cfg, err := parseRestartArgs(args)
	if err != nil {
		return err
	}
	var systems []restartSystem
	if cfg.corral != "" {
		systems = append(systems, &corralRestart{eps: strings.Split(cfg.corral, ",")})
	}
	if cfg.etcdEP != "" {
		systems = append(systems, &etcdRestart{eps: strings.Split(cfg.etcdEP, ",")})
	}
	if cfg.zkEP != "" {
		systems = append(systems, &zkRestart{eps: strings.Split(cfg.zkEP, ",")})
	}
	rep := restartReport{Start: time.Now().UTC(), Keys: cfg.keys, ValueSize: cfg.valueSize, Writers: cfg.writers,
		Trials: cfg.trials, Signal: cfg.signal, PollMS: ms(cfg.poll), AttemptMS: ms(cfg.attemptTimeout), WithinS: cfg.within.Seconds()}
	fmt.Printf("# restart: %s keys of %d B, %d writers; %d trials of SIG%s to all 3 nodes and a start with the same argv; "+
		"an attempt every %s (at most %d at once, %s each); load at start: %s\n",
		thousands(cfg.keys), cfg.valueSize, cfg.writers, cfg.trials, cfg.signal, cfg.poll, cfg.inFlight, cfg.attemptTimeout, loadAvg())
	value := bytes.Repeat([]byte("v"), cfg.valueSize)
	for _, sys := range systems {
		run := &restartRun{System: sys.name(), Endpoints: sys.endpoints(), Keys: cfg.keys, sys: sys}
		rep.Systems = append(rep.Systems, run)
		if err := loadSystem(run, cfg, value); err != nil {
			run.Error = "load: " + err.Error()
			fmt.Fprintf(os.Stderr, "compare restart: %s: %s; no restart of it\n", sys.name(), run.Error)
			continue
		}
		fmt.Printf("%-6s load: %s keys in %.1fs, %s keys/s, %d retries; RSS MiB per node before %s, after %s; %.0f bytes per key\n",
			run.System, thousands(run.Loaded), run.LoadSeconds, thousands(int(run.LoadPerS)), run.LoadRetries,
			joinMiB(run.Nodes, false), joinMiB(run.Nodes, true), run.BytesPerKey)
	}
	for t := 1; t <= cfg.trials; t++ {
		for _, run := range rep.Systems {
			if run.Error != "" {
				continue
			}
			tr := restartOnce(run.sys, t, cfg, value)
			run.Trials = append(run.Trials, tr)
			fmt.Println(trialLine(run.System, tr))
			if tr.Error != "" {
				// The cluster may be left short of nodes: its later trials would measure that, not a restart.
				run.Error = fmt.Sprintf("trial %d: %s", t, tr.Error)
				fmt.Fprintf(os.Stderr, "compare restart: %s: %s; no more trials of it\n", run.System, run.Error)
			}
		}
	}
	for _, run := range rep.Systems {
		if run.System == "corral" && run.Error == "" && cfg.snapWindows > 0 {
			snapshotWindowsOf(run, cfg, value)
		}
	}
	fmt.Printf("# load at end: %s\n\n", loadAvg())
	printRestartTable(os.Stdout, rep.Systems, cfg.within)
	if cfg.jsonFile != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	var failed []string
	for _, run := range rep.Systems {
		if run.Error != "" {
			failed = append(failed, run.System+": "+run.Error)
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// nodePIDs finds the process of every node of sys.
func nodePIDs(sys restartSystem) ([]int, error) {
	var pids []int
	for _, ep := range sys.endpoints() {
		pid, err := listenerPID(ep)
		if err != nil {
			return nil, fmt.Errorf("find the process of %s: %w", ep, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// checkHealthy waits until sys's nodes all answer and agree on one leader, with a health checker made now.
func checkHealthy(sys restartSystem, limit time.Duration) error {
	h, err := sys.health()
	if err != nil {
		return err
	}
	defer h.close()
	return waitHealthy(context.Background(), h, limit)
}

// restartOnce is one trial of sys (see the file comment). Failures are returned in the trial's Error.
func restartOnce(sys restartSystem, trial int, cfg restartConfig, value []byte) restartTrial {
	tr := restartTrial{Trial: trial, Signal: cfg.signal}
	fail := func(format string, a ...any) restartTrial {
		tr.Error = fmt.Sprintf(format, a...)
		tr.LoadAvg = loadAvg()
		return tr
	}
	if err := checkHealthy(sys, cfg.healthyWithin); err != nil {
		return fail("before the stop: %v", err)
	}
	pids, err := nodePIDs(sys)
	if err != nil {
		return fail("%v", err)
	}
	if cfg.quiet.idle > 0 {
		syscall.Sync() // dirty pages (any system's) written back now, not during this restart
	}
	tr.Quiet = cfg.quiet.wait()
	launches := make([]procLaunch, len(pids))
	bins := make([]string, len(pids))
	for i, p := range pids {
		if launches[i], err = readProcLaunch(p); err != nil {
			return fail("read how pid %d was started: %v", p, err)
		}
		if bins[i], err = launches[i].binary(); err != nil {
			return fail("%v", err)
		}
	}
	sig := syscall.SIGTERM
	if cfg.signal == "KILL" {
		sig = syscall.SIGKILL
	}
	stopped := time.Now()
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil {
			return fail("SIG%s pid %d: %v", cfg.signal, p, err)
		}
	}
	for _, p := range pids {
		if _, err := waitProcessGone(p, cfg.stopWithin-time.Since(stopped)); err != nil {
			return fail("%v", err)
		}
	}
	tr.StopMS = ms(time.Since(stopped))

	start := time.Now()
	for i, l := range launches {
		p, err := relaunch(l, bins[i], "restart-"+sys.name(),
			fmt.Sprintf("restarted by scripts/compare restart, trial %d (old pid %d)", trial, pids[i]), cfg.pidFile)
		if err != nil {
			return fail("start %s again from %s: %v; the cluster is short of nodes", sys.endpoints()[i], bins[i], err)
		}
		tr.PIDs = append(tr.PIDs, p)
	}
	var rd, wr pollResult
	tracer := func(what string) func(began, ended time.Duration, err error) {
		if !cfg.trace {
			return nil
		}
		return func(began, ended time.Duration, err error) {
			fmt.Fprintf(os.Stderr, "# trace %s trial %d %s: %.3f-%.3fs %v\n", sys.name(), trial, what, began.Seconds(), ended.Seconds(), err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		rd = firstSuccess(start, cfg.poll, cfg.attemptTimeout, cfg.within, cfg.inFlight, func(ctx context.Context) error {
			return sys.read(ctx, cfg.valueSize)
		}, tracer("read"))
	})
	wg.Go(func() {
		wr = firstSuccess(start, cfg.poll, cfg.attemptTimeout, cfg.within, cfg.inFlight, func(ctx context.Context) error {
			return sys.write(ctx, value)
		}, tracer("write"))
	})
	wg.Wait()
	tr.ReadMS, tr.ReadOK, tr.ReadAttempts, tr.ReadLastErr = ms(rd.after), rd.ok, rd.attempts, rd.lastErr
	tr.WriteMS, tr.WriteOK, tr.WriteAttempts, tr.WriteLastErr = ms(wr.after), wr.ok, wr.attempts, wr.lastErr
	if err := checkHealthy(sys, cfg.healthyWithin); err != nil {
		return fail("after the start: %v", err)
	}
	tr.HealthyMS = ms(time.Since(start))
	time.Sleep(cfg.settle)
	for _, p := range tr.PIDs {
		tr.RSSAfterMiB = append(tr.RSSAfterMiB, procRSSMiB(p))
	}
	tr.LoadAvg = loadAvg()
	if !rd.ok || !wr.ok {
		// Healthy, yet no read or write within the limit: the figure is "more than the limit"; go on.
		fmt.Fprintf(os.Stderr, "compare restart: %s trial %d: read ok %v (%s), write ok %v (%s)\n",
			sys.name(), trial, rd.ok, rd.lastErr, wr.ok, wr.lastErr)
	}
	return tr
}

func trialLine(system string, tr restartTrial) string {
	if tr.Error != "" {
		return fmt.Sprintf("trial %-2d %-6s FAILED: %s", tr.Trial, system, tr.Error)
	}
	return fmt.Sprintf("trial %-2d %-6s SIG%s, all 3 gone in %.2fs; after the start: first read %s (%d attempts), first write %s (%d attempts), "+
		"healthy %.2fs; RSS MiB per node %s; before the stop %s; load %s", tr.Trial, system, tr.Signal, tr.StopMS/1000,
		secondsText(tr.ReadMS, tr.ReadOK), tr.ReadAttempts, secondsText(tr.WriteMS, tr.WriteOK), tr.WriteAttempts,
		tr.HealthyMS/1000, joinFloats(tr.RSSAfterMiB), tr.Quiet, tr.LoadAvg)
}

// secondsText is a duration in ms as seconds, "> limit" when nothing succeeded within it.
func secondsText(msv float64, ok bool) string {
	if !ok {
		return fmt.Sprintf(">%.2fs", msv/1000)
	}
	return fmt.Sprintf("%.3fs", msv/1000)
}

// medianText is the median of the trials' figures (ms) in seconds; a trial without success counts as longer than
// any other, and a median that falls on one is "> limit".
func medianText(msv []float64, ok []bool, limit time.Duration) string {
	if len(msv) == 0 {
		return "–"
	}
	vals := make([]float64, len(msv))
	for i, v := range msv {
		vals[i] = v
		if !ok[i] {
			vals[i] = -1 // sorted last below
		}
	}
	slices.SortFunc(vals, func(a, b float64) int {
		switch {
		case a == b:
			return 0
		case a < 0:
			return 1
		case b < 0:
			return -1
		case a < b:
			return -1
		}
		return 1
	})
	n := len(vals)
	lo, hi := vals[(n-1)/2], vals[n/2]
	if lo < 0 || hi < 0 {
		return fmt.Sprintf(">%.0f s", limit.Seconds())
	}
	return fmt.Sprintf("%.2f s", (lo+hi)/2/1000)
}

// printRestartTable prints the markdown table, one row per system.
func printRestartTable(w io.Writer, runs []*restartRun, limit time.Duration) {
	fmt.Fprintln(w, "| system | keys | load rate | RSS per node after load | bytes per key | restart to read, each trial | median | "+
		"restart to write, each trial | median | RSS per node after the last restart |")
	fmt.Fprintln(w, "|---|---:|---:|---|---:|---|---:|---|---:|---|")
	for _, r := range runs {
		var rd, wr, eachR, eachW []string
		var rms, wms []float64
		var rok, wok []bool
		var lastRSS []float64
		for _, t := range r.Trials {
			if t.Error != "" {
				eachR = append(eachR, "failed")
				eachW = append(eachW, "failed")
				continue
			}
			rms, rok = append(rms, t.ReadMS), append(rok, t.ReadOK)
			wms, wok = append(wms, t.WriteMS), append(wok, t.WriteOK)
			eachR = append(eachR, strings.TrimSuffix(secondsText(t.ReadMS, t.ReadOK), "s"))
			eachW = append(eachW, strings.TrimSuffix(secondsText(t.WriteMS, t.WriteOK), "s"))
			lastRSS = t.RSSAfterMiB
		}
		rd = append(rd, eachText(eachR), medianText(rms, rok, limit))
		wr = append(wr, eachText(eachW), medianText(wms, wok, limit))
		rate, rss, bpk := "–", "–", "–"
		if r.LoadSeconds > 0 {
			rate = thousands(int(r.LoadPerS)) + "/s"
		}
		if len(r.Nodes) > 0 && r.Nodes[0].AfterMiB > 0 {
			rss = joinMiB(r.Nodes, true) + " MiB"
		}
		if r.BytesPerKey != 0 {
			bpk = fmt.Sprintf("%.0f", r.BytesPerKey)
		}
		last := "–"
		if len(lastRSS) > 0 {
			last = joinFloats(lastRSS) + " MiB"
		}
		keys := thousands(r.Keys)
		if r.Error != "" && r.Loaded < r.Keys {
			keys = thousands(r.Loaded) + " of " + keys + " (load failed)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.System, keys, rate, rss, bpk,
			rd[0], rd[1], wr[0], wr[1], last)
	}
}

// eachText lists every trial's figure, in seconds.
func eachText(each []string) string {
	if len(each) == 0 {
		return "–"
	}
	return strings.Join(each, ", ") + " s"
}

// joinMiB lists the nodes' RSS before or after the load, in whole MiB.
func joinMiB(nodes []nodeRSS, after bool) string {
	var v []float64
	for _, n := range nodes {
		if after {
			v = append(v, n.AfterMiB)
		} else {
			v = append(v, n.BeforeMiB)
		}
	}
	return joinFloats(v)
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strings.Join(s, ", ")
}

// thousands writes n with commas: 1000000 as 1,000,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// snapshotWindowsOf runs the snapshot windows (snapwin.go) on run's
// cluster and prints them; a failure is the run's Error.
func snapshotWindowsOf(run *restartRun, cfg restartConfig, value []byte) {
	if err := checkHealthy(run.sys, cfg.healthyWithin); err != nil {
		run.Error = "snapshot windows: " + err.Error()
		return
	}
	put, closeLoad, err := run.sys.openLoad()
	if err != nil {
		run.Error = "snapshot windows: " + err.Error()
		return
	}
	defer closeLoad()
	fmt.Printf("# %s: %d writers to random keys, %d windows of %s, snapshots counted around each\n",
		run.System, cfg.snapWriters, cfg.snapWindows, cfg.snapWindow)
	ws, err := runSnapshotWindows(run.sys.endpoints(), put, cfg.keys, cfg.snapWriters, cfg.snapWindows, cfg.snapWindow, value)
	run.SnapWindows, run.SnapWriters = ws, cfg.snapWriters
	for _, w := range ws {
		fmt.Printf("%-6s window %-3d ops=%-6d errors=%-3d p50=%.1fms p99=%.1fms max=%.1fms snapshots ended=%d may overlap=%v\n",
			run.System, w.Index, w.Ops, w.Errors, w.P50MS, w.P99MS, w.MaxMS, w.Snapshots, w.Marked)
	}
	if err != nil {
		run.Error = "snapshot windows: " + err.Error()
		return
	}
	fmt.Printf("# %s snapshot windows: %s\n", run.System, snapshotWindowsLine(ws))
}
