package main

// "compare zk": corral's ZooKeeper port (--zk-addr) beside ZooKeeper, both
// driven by go-zookeeper (issue 20, item 5; docs/PERFORMANCE.md "ZooKeeper
// protocol: corral's --zk-addr beside ZooKeeper 3.8").
//
//  1. create, setData and getData in closed loops, one go-zookeeper
//     connection per client listing all three servers; the systems in
//     turn per round, op and client count.
//  2. S sessions (zksession.go), ramped, each with one ephemeral znode and
//     a ping every timeout/3; ping round trips, RSS and CPU of the nodes
//     over a steady phase, sessions lost in it; then 100 sockets closed
//     without closeSession and the time until each ephemeral znode is gone.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

type zkPerfConfig struct {
	systems    []zkSystem
	rounds     int
	duration   time.Duration
	clients    []int
	ops        []string // create, setData, getData: which to run
	keys       int
	valueSize  int
	sessions   int
	rampPerSec int
	timeout    time.Duration
	steady     time.Duration
	expireN    int
	jsonFile   string
	skipLoad   bool
	quiet      quietFlags // before each op run (quiet.go)
	slow       *slowLog   // every op over -slow (slowlog.go); nil: none
}

type zkSystem struct {
	Name      string   `json:"name"`
	Endpoints []string `json:"endpoints"`
}

type opRun struct {
	System  string      `json:"system"`
	Op      string      `json:"op"`
	Clients int         `json:"clients"`
	Round   int         `json:"round"`
	Ops     int         `json:"ops"`
	Errors  int         `json:"errors"`
	FirstEr string      `json:"first_error,omitempty"`
	Seconds float64     `json:"seconds"`
	OpsPerS float64     `json:"ops_per_s"`
	P50MS   float64     `json:"p50_ms"`
	P99MS   float64     `json:"p99_ms"`
	MaxMS   float64     `json:"max_ms"`
	LoadAvg string      `json:"loadavg"`
	Quiet   quietResult `json:"quiet"` // the machine just before the run
	// The system's servers over the run (each endpoint's listening
	// process): CPU time (user + system) and context switches of all
	// their threads, in total; per op they are what a write or a read
	// costs those servers.
	ServerPIDs     []int   `json:"server_pids,omitempty"`
	ServerCPUMS    float64 `json:"server_cpu_ms"`
	ServerSwitches int64   `json:"server_switches"`
	lat            []time.Duration
}

// perOp divides a run's server totals by its ops (0 without ops).
func (r *opRun) perOp() (cpuMS, switches float64) {
	if r.Ops == 0 {
		return 0, 0
	}
	return r.ServerCPUMS / float64(r.Ops), float64(r.ServerSwitches) / float64(r.Ops)
}

type nodeUsage struct {
	Endpoint string  `json:"endpoint"`
	PID      int     `json:"pid"`
	RSSMiB   float64 `json:"rss_mib"`
	CPUPct   float64 `json:"cpu_pct"` // of one core, over the steady phase
}

type sessionRun struct {
	System      string      `json:"system"`
	Wanted      int         `json:"wanted"`
	Established int         `json:"established"`
	Failed      int         `json:"failed"`
	FirstErrors []string    `json:"first_errors,omitempty"`
	EstablishS  float64     `json:"establish_s"`
	RampPerS    int         `json:"ramp_per_s"`
	TimeoutMS   int64       `json:"negotiated_timeout_ms"`
	SteadyS     float64     `json:"steady_s"`
	Pings       int         `json:"pings"`
	PingP50MS   float64     `json:"ping_p50_ms"`
	PingP99MS   float64     `json:"ping_p99_ms"`
	PingMaxMS   float64     `json:"ping_max_ms"`
	Nodes       []nodeUsage `json:"nodes"`
	LostSteady  int         `json:"lost_in_steady"`
	LostWhy     []string    `json:"lost_why,omitempty"`
	Aborted     int         `json:"aborted"`
	Expired     int         `json:"expired"` // ephemeral znode gone within the limit
	ExpiryMinMS float64     `json:"expiry_min_ms"`
	ExpiryP50MS float64     `json:"expiry_p50_ms"`
	ExpiryMaxMS float64     `json:"expiry_max_ms"`
	ExpiryAllMS []float64   `json:"expiry_all_ms"`
	// From the last request the session sent (its last ping) instead of the
	// close: what ZooKeeper's timeout counts from.
	FromLastMinMS float64   `json:"expiry_from_last_request_min_ms"`
	FromLastP50MS float64   `json:"expiry_from_last_request_p50_ms"`
	FromLastMaxMS float64   `json:"expiry_from_last_request_max_ms"`
	FromLastAllMS []float64 `json:"expiry_from_last_request_all_ms"`
	LeftAfterMS   float64   `json:"cleanup_ms"`
	LoadAvg       string    `json:"loadavg"`
	UptimeAtStart string    `json:"uptime_at_start"`
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}

func runZKPerf(args []string) error {
	flags := flag.NewFlagSet("compare zk", flag.ContinueOnError)
	var cfg zkPerfConfig
	corralEP := flags.String("corral", "", "corral's --zk-addr endpoints, host:port,...")
	zkEP := flags.String("zk", "", "ZooKeeper's client endpoints, host:port,...")
	clients := flags.String("clients", "1 16 128", "client counts")
	ops := flags.String("ops", "create setData getData", "which ops to run, in this order")
	flags.IntVar(&cfg.rounds, "rounds", 3, "rounds (systems in turn in each)")
	flags.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each op run")
	flags.IntVar(&cfg.keys, "keys", 1000, "znodes for setData and getData")
	flags.IntVar(&cfg.valueSize, "value-size", 256, "bytes per value")
	flags.IntVar(&cfg.sessions, "sessions", 10000, "sessions in the sessions phase (0: skip it)")
	flags.IntVar(&cfg.rampPerSec, "ramp", 500, "new sessions per second")
	flags.DurationVar(&cfg.timeout, "session-timeout", 30*time.Second, "session timeout asked for")
	flags.DurationVar(&cfg.steady, "steady", 30*time.Second, "steady phase with all sessions pinging")
	flags.IntVar(&cfg.expireN, "expire", 100, "sessions whose sockets are closed without closeSession")
	flags.StringVar(&cfg.jsonFile, "json", "", "also write every run as JSON to this file")
	cfg.quiet.register(flags, "before each op run", 30*time.Second)
	flags.BoolVar(&cfg.skipLoad, "skip-ops", false, "skip the create/setData/getData phase")
	slow := flags.Duration("slow", 0, "print every op slower than this to stderr, with the time it started (0: none)")
	flags.SetOutput(os.Stderr)
	if err := flags.Parse(args); err != nil {
		return err
	}
	cfg.slow = newSlowLog(os.Stderr, *slow)
	for _, c := range splitList(*clients) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("-clients: want counts of 1-1024, got %q", c)
		}
		cfg.clients = append(cfg.clients, n)
	}
	for _, op := range splitList(*ops) {
		if op != "create" && op != "setData" && op != "getData" {
			return fmt.Errorf("-ops: want create, setData or getData, got %q", op)
		}
		cfg.ops = append(cfg.ops, op)
	}
	if *corralEP != "" {
		cfg.systems = append(cfg.systems, zkSystem{"corral", splitList(*corralEP)})
	}
	if *zkEP != "" {
		cfg.systems = append(cfg.systems, zkSystem{"zk", splitList(*zkEP)})
	}
	switch {
	case len(cfg.systems) == 0:
		return errors.New("want -corral and/or -zk endpoints")
	case cfg.rounds < 1 || cfg.rounds > 100, cfg.duration <= 0 || cfg.duration > 10*time.Minute:
		return errors.New("want 1-100 rounds of up to 10m")
	case cfg.sessions < 0 || cfg.sessions > 15000:
		return errors.New("-sessions: want 0-15000 (one socket each in this process)")
	case cfg.quiet.check() != nil:
		return cfg.quiet.check()
	case cfg.rampPerSec < 1, cfg.timeout < 2*time.Second, cfg.steady <= 0, cfg.expireN < 0:
		return errors.New("want -ramp ≥ 1, -session-timeout ≥ 2s, -steady > 0, -expire ≥ 0")
	}
	cfg.expireN = min(cfg.expireN, cfg.sessions)

	out := struct {
		Start    string       `json:"start"`
		UptimeA  string       `json:"uptime_at_start"`
		UptimeB  string       `json:"uptime_at_end"`
		Systems  []zkSystem   `json:"systems"`
		Duration string       `json:"duration"`
		Runs     []*opRun     `json:"runs"`
		Sessions []sessionRun `json:"sessions"`
	}{Start: time.Now().UTC().Format(time.RFC3339), UptimeA: uptime(), Systems: cfg.systems, Duration: cfg.duration.String()}
	fmt.Printf("# uptime at start: %s\n", out.UptimeA)

	if !cfg.skipLoad {
		for _, s := range cfg.systems {
			if err := zkPrepare(s.Endpoints, cfg.keys); err != nil {
				return fmt.Errorf("%s: create the znodes: %w", s.Name, err)
			}
		}
		for r := 1; r <= cfg.rounds; r++ {
			for _, c := range cfg.clients {
				for _, op := range cfg.ops {
					for _, s := range cfg.systems {
						run, err := runOp(s, op, c, r, cfg)
						if err != nil {
							return fmt.Errorf("%s %s clients=%d: %w", s.Name, op, c, err)
						}
						cpuOp, swOp := run.perOp()
						fmt.Printf("round-%d %-6s %-7s clients=%-4d ops=%-7d errors=%-4d ops/s=%-8.1f p50=%-7.2fms p99=%-7.2fms max=%.2fms cpu/op=%.3fms switches/op=%.1f before: %s\n",
							r, s.Name, op, c, run.Ops, run.Errors, run.OpsPerS, run.P50MS, run.P99MS, run.MaxMS, cpuOp, swOp, run.Quiet)
						out.Runs = append(out.Runs, run)
					}
				}
			}
		}
	}
	if cfg.sessions > 0 {
		for _, s := range cfg.systems {
			res := runSessions(s, cfg)
			out.Sessions = append(out.Sessions, res)
		}
	}
	out.UptimeB = uptime()
	fmt.Printf("# uptime at end: %s\n\n", out.UptimeB)
	if !cfg.skipLoad {
		printOpTables(os.Stdout, cfg, out.Runs)
		printCostTable(os.Stdout, cfg, out.Runs)
	}
	if cfg.sessions > 0 {
		printSessionTable(os.Stdout, out.Sessions)
	}
	if cfg.jsonFile != "" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func uptime() string {
	b, err := exec.Command("uptime").Output()
	if err != nil {
		return "load average: " + loadAvg()
	}
	return strings.TrimSpace(string(b))
}

// runOp runs one op for cfg.duration with c clients, each its own
// go-zookeeper connection listing every server.
func runOp(s zkSystem, op string, c, round int, cfg zkPerfConfig) (*opRun, error) {
	conns := make([]*zk.Conn, c)
	for i := range conns {
		conn, err := zkConnect(s.Endpoints)
		if err != nil {
			for _, cc := range conns[:i] {
				cc.Close()
			}
			return nil, fmt.Errorf("connect client %d: %w", i, err)
		}
		conns[i] = conn
	}
	defer func() {
		for _, cc := range conns {
			cc.Close()
		}
	}()
	value := []byte(strings.Repeat("v", cfg.valueSize))
	prefix := fmt.Sprintf("/bench/c%d-%s-r%d-", time.Now().UnixNano(), op, round)
	quiet := cfg.quiet.wait()
	pids := serverPIDs(s.Endpoints)
	cpu0, sw0 := serversCPU(pids), serversSwitches(pids)
	var (
		mu      sync.Mutex
		lat     []time.Duration
		errs    int
		firstEr string
		wg      sync.WaitGroup
		stop    atomic.Bool
	)
	start := time.Now()
	deadline := start.Add(cfg.duration)
	for ci, conn := range conns {
		wg.Go(func() {
			mine := make([]time.Duration, 0, 4096)
			bad := 0
			var badEr string
			for n := 0; !stop.Load(); n++ {
				var err error
				t0 := time.Now()
				switch op {
				case "create":
					_, err = conn.Create(prefix+strconv.Itoa(ci)+"-"+strconv.Itoa(n), value, 0, zk.WorldACL(zk.PermAll))
				case "setData":
					_, err = conn.Set("/bench/k"+strconv.Itoa((ci+n*c)%cfg.keys), value, -1)
				case "getData":
					_, _, err = conn.Get("/bench/k" + strconv.Itoa((ci+n*c)%cfg.keys))
				}
				t1 := time.Now()
				if t1.After(deadline) {
					stop.Store(true)
					break // past the deadline: not counted
				}
				if err != nil {
					if badEr == "" {
						badEr = err.Error()
					}
					bad++
					continue
				}
				mine = append(mine, t1.Sub(t0))
				cfg.slow.note(s.Name+" "+op, t0, t1.Sub(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			if firstEr == "" {
				firstEr = badEr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	cpu, sw := serversCPU(pids)-cpu0, serversSwitches(pids)-sw0
	elapsed := cfg.duration
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	run := &opRun{System: s.Name, Op: op, Clients: c, Round: round, Ops: len(lat), Errors: errs, FirstEr: firstEr,
		Seconds: elapsed.Seconds(), OpsPerS: float64(len(lat)) / elapsed.Seconds(),
		P50MS: ms(pctOf(lat, 0.50)), P99MS: ms(pctOf(lat, 0.99)), MaxMS: ms(pctOf(lat, 1)), LoadAvg: loadAvg(), Quiet: quiet,
		ServerPIDs: pids, ServerCPUMS: ms(cpu), ServerSwitches: sw, lat: lat}
	return run, nil
}

// serverPIDs finds the process behind each endpoint on this machine; an
// endpoint whose process cannot be found (another machine) is left out,
// and the run then reports only the servers it found.
func serverPIDs(endpoints []string) []int {
	var pids []int
	for _, ep := range endpoints {
		if pid, err := listenerPID(ep); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pctOf is the p-quantile of sorted (p = 1: the maximum).
func pctOf(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// printOpTables prints the op table over all rounds and, with more than
// one round, again over rounds 2 on: the first round meets ZooKeeper's
// JVM cold (its code not compiled yet), which the pooled figures would
// count in corral's favour.
func printOpTables(w io.Writer, cfg zkPerfConfig, runs []*opRun) {
	printOpTable(w, cfg, runs, fmt.Sprintf("%d rounds pooled", cfg.rounds))
	if cfg.rounds < 2 {
		return
	}
	var warm []*opRun
	for _, r := range runs {
		if r.Round > 1 {
			warm = append(warm, r)
		}
	}
	printOpTable(w, cfg, warm, fmt.Sprintf("rounds 2-%d pooled, every system warm", cfg.rounds))
}

func printOpTable(w io.Writer, cfg zkPerfConfig, runs []*opRun, which string) {
	fmt.Fprintf(w, "create/setData/getData, %d-byte values, %s per run, %s (ops/s: all ops / all time; p50, p99: over all ops)\n\n",
		cfg.valueSize, cfg.duration, which)
	fmt.Fprint(w, "| op | clients |")
	for _, s := range cfg.systems {
		fmt.Fprintf(w, " %s ops/s | %s p50 ms | %s p99 ms |", s.Name, s.Name, s.Name)
	}
	fmt.Fprintln(w, " errors |")
	fmt.Fprint(w, "|---|---:|")
	for range cfg.systems {
		fmt.Fprint(w, "---:|---:|---:|")
	}
	fmt.Fprintln(w, "---:|")
	for _, op := range cfg.ops {
		for _, c := range cfg.clients {
			fmt.Fprintf(w, "| %s | %d |", op, c)
			errs := []string{}
			for _, s := range cfg.systems {
				var all []time.Duration
				secs, e := 0.0, 0
				for _, r := range runs {
					if r.System == s.Name && r.Op == op && r.Clients == c {
						all = append(all, r.lat...)
						secs += r.Seconds
						e += r.Errors
					}
				}
				sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
				rate := 0.0
				if secs > 0 {
					rate = float64(len(all)) / secs
				}
				fmt.Fprintf(w, " %.0f | %.2f | %.2f |", rate, ms(pctOf(all, 0.5)), ms(pctOf(all, 0.99)))
				errs = append(errs, fmt.Sprintf("%s %d", s.Name, e))
			}
			fmt.Fprintf(w, " %s |\n", strings.Join(errs, ", "))
		}
	}
	fmt.Fprintln(w)
}

// printCostTable prints what each op cost the servers, pooled over the
// rounds: their CPU time and context switches over all runs of the op,
// divided by all its ops.
func printCostTable(w io.Writer, cfg zkPerfConfig, runs []*opRun) {
	fmt.Fprintln(w, "servers' cost per op, pooled (the CPU time and context switches of the servers behind the endpoints, over the runs ÷ their ops)")
	fmt.Fprintln(w)
	fmt.Fprint(w, "| op | clients |")
	for _, s := range cfg.systems {
		fmt.Fprintf(w, " %s CPU ms/op | %s switches/op |", s.Name, s.Name)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|---|---:|")
	for range cfg.systems {
		fmt.Fprint(w, "---:|---:|")
	}
	fmt.Fprintln(w)
	for _, op := range cfg.ops {
		for _, c := range cfg.clients {
			fmt.Fprintf(w, "| %s | %d |", op, c)
			for _, s := range cfg.systems {
				pooled := opRun{}
				for _, r := range runs {
					if r.System == s.Name && r.Op == op && r.Clients == c {
						pooled.Ops += r.Ops
						pooled.ServerCPUMS += r.ServerCPUMS
						pooled.ServerSwitches += r.ServerSwitches
					}
				}
				cpu, sw := pooled.perOp()
				fmt.Fprintf(w, " %.3f | %.1f |", cpu, sw)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
}

func printSessionTable(w io.Writer, res []sessionRun) {
	fmt.Fprintln(w, "sessions: ephemeral znode each, ping every timeout/3; RSS at the end of the steady phase, CPU over it (% of one core)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| system | established | time to establish | ping p50 / p99 / max ms | RSS MiB per node | CPU % per node | lost in steady | "+
		"znode gone after abort: n, min / p50 / max s from the close | same, from the last ping (timeout) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range res {
		var rss, cpu []string
		for _, n := range r.Nodes {
			rss = append(rss, fmt.Sprintf("%.0f", n.RSSMiB))
			cpu = append(cpu, fmt.Sprintf("%.0f", n.CPUPct))
		}
		fmt.Fprintf(w, "| %s | %d / %d | %.1f s (ramp %d/s) | %.2f / %.2f / %.2f | %s | %s | %d | %d/%d, %.2f / %.2f / %.2f | %.2f / %.2f / %.2f (%.0f s) |\n",
			r.System, r.Established, r.Wanted, r.EstablishS, r.RampPerS, r.PingP50MS, r.PingP99MS, r.PingMaxMS,
			strings.Join(rss, ", "), strings.Join(cpu, ", "), r.LostSteady, r.Expired, r.Aborted,
			r.ExpiryMinMS/1000, r.ExpiryP50MS/1000, r.ExpiryMaxMS/1000,
			r.FromLastMinMS/1000, r.FromLastP50MS/1000, r.FromLastMaxMS/1000, float64(r.TimeoutMS)/1000)
		for _, e := range r.FirstErrors {
			fmt.Fprintf(w, "  %s session error: %s\n", r.System, e)
		}
		for _, e := range r.LostWhy {
			fmt.Fprintf(w, "  %s lost: %s\n", r.System, e)
		}
	}
	fmt.Fprintln(w)
}

// procRSSMiB is pid's resident set size (VmRSS) in MiB.
func procRSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// runSessions is phase 2 for one system. Failures are reported in the
// result, not returned: where it stopped is a finding.
func runSessions(s zkSystem, cfg zkPerfConfig) sessionRun {
	res := sessionRun{System: s.Name, Wanted: cfg.sessions, RampPerS: cfg.rampPerSec, UptimeAtStart: uptime()}
	note := func(format string, a ...any) {
		fmt.Printf("# %s sessions: %s\n", s.Name, fmt.Sprintf(format, a...))
	}
	adm, err := zkConnect(s.Endpoints)
	if err != nil {
		res.FirstErrors = append(res.FirstErrors, "admin connection: "+err.Error())
		return res
	}
	defer adm.Close()
	if _, err := adm.Create("/sessions", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		res.FirstErrors = append(res.FirstErrors, "create /sessions: "+err.Error())
		return res
	}
	pids := make([]int, len(s.Endpoints))
	for i, ep := range s.Endpoints {
		pids[i], _ = listenerPID(ep)
	}

	// Ramp up.
	sess := make([]*rawSession, cfg.sessions)
	stopPing := make(chan struct{})
	var (
		wg     sync.WaitGroup
		emu    sync.Mutex
		failed int
	)
	interval := cfg.timeout / 3
	t0 := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(cfg.rampPerSec))
	for i := range sess {
		<-tick.C
		wg.Go(func() {
			addr := s.Endpoints[i%len(s.Endpoints)]
			rs, err := dialSession(addr, cfg.timeout, fmt.Sprintf("/sessions/s-%d", i))
			if err != nil {
				emu.Lock()
				failed++
				if len(res.FirstErrors) < 5 {
					res.FirstErrors = append(res.FirstErrors, fmt.Sprintf("session %d on %s at %.1fs: %v", i, addr, time.Since(t0).Seconds(), err))
				}
				emu.Unlock()
				return
			}
			sess[i] = rs
			go rs.pingEvery(interval*time.Duration(i%1000)/1000, interval, stopPing)
		})
		if (i+1)%1000 == 0 {
			note("%d started, %.1fs", i+1, time.Since(t0).Seconds())
		}
	}
	tick.Stop()
	wg.Wait()
	res.EstablishS = time.Since(t0).Seconds()
	res.Failed = failed
	for _, rs := range sess {
		if rs != nil {
			res.Established++
			if res.TimeoutMS == 0 {
				res.TimeoutMS = rs.timeout.Milliseconds()
			}
		}
	}
	note("%d of %d established in %.1fs (%d failed), negotiated timeout %dms", res.Established, cfg.sessions, res.EstablishS, failed, res.TimeoutMS)

	// Steady phase.
	cpu0 := make([]int64, len(pids))
	for i, p := range pids {
		cpu0[i], _ = procCPU(p)
	}
	lostBefore := countLost(sess)
	pingRTTs.start()
	ts := time.Now()
	time.Sleep(cfg.steady)
	rtts := pingRTTs.stop()
	res.SteadyS = time.Since(ts).Seconds()
	for i, p := range pids {
		c1, _ := procCPU(p)
		res.Nodes = append(res.Nodes, nodeUsage{Endpoint: s.Endpoints[i], PID: p, RSSMiB: procRSSMiB(p),
			CPUPct: float64(c1-cpu0[i]) / res.SteadyS})
	}
	res.LostSteady = countLost(sess) - lostBefore
	for _, rs := range sess {
		if rs != nil && rs.lost.Load() != 0 && len(res.LostWhy) < 5 {
			why, _ := rs.lostWhy.Load().(string)
			res.LostWhy = append(res.LostWhy, why)
		}
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	res.Pings = len(rtts)
	res.PingP50MS, res.PingP99MS, res.PingMaxMS = ms(pctOf(rtts, 0.5)), ms(pctOf(rtts, 0.99)), ms(pctOf(rtts, 1))
	note("steady %.0fs: %d pings, p50 %.2fms p99 %.2fms max %.2fms, %d lost", res.SteadyS, res.Pings, res.PingP50MS, res.PingP99MS, res.PingMaxMS, res.LostSteady)

	// Expiry: abort expireN live sessions spread over the range, watch
	// their znodes from the admin connection.
	var victims []int
	if n := cfg.expireN; n > 0 && res.Established > 0 {
		for k := 0; k < n; k++ {
			i := k * cfg.sessions / n
			for ; i < cfg.sessions && (sess[i] == nil || sess[i].lost.Load() != 0); i++ {
			}
			if i < cfg.sessions && (len(victims) == 0 || victims[len(victims)-1] != i) {
				victims = append(victims, i)
			}
		}
	}
	type watched struct {
		ch <-chan zk.Event
		ok bool
	}
	ws := make([]watched, len(victims))
	for k, i := range victims {
		ok, _, ch, err := adm.ExistsW(fmt.Sprintf("/sessions/s-%d", i))
		ws[k] = watched{ch, err == nil && ok}
	}
	limit := 2*time.Duration(res.TimeoutMS)*time.Millisecond + 15*time.Second
	closedAt := make([]time.Time, len(victims))
	lastAt := make([]time.Time, len(victims))
	goneAfter := make([]time.Duration, len(victims))
	var ewg sync.WaitGroup
	for k, i := range victims {
		if !ws[k].ok {
			continue
		}
		res.Aborted++
		closedAt[k] = time.Now()
		sess[i].abort()
		lastAt[k] = time.Unix(0, sess[i].lastSent.Load())
		ewg.Go(func() {
			path := fmt.Sprintf("/sessions/s-%d", i)
			ch := ws[k].ch
			end := time.After(limit)
			for {
				var retry <-chan time.Time
				if ch == nil {
					retry = time.After(100 * time.Millisecond)
				}
				select {
				case ev := <-ch:
					if ev.Type == zk.EventNodeDeleted {
						goneAfter[k] = time.Since(closedAt[k])
						return
					}
				case <-retry:
				case <-end:
					return
				}
				// Another event, or a retry: watch again.
				ok, _, nch, err := adm.ExistsW(path)
				if err == nil && !ok {
					goneAfter[k] = time.Since(closedAt[k])
					return
				}
				ch = nch
				if err != nil {
					ch = nil
				}
			}
		})
	}
	ewg.Wait()
	var exp, fromLast []float64
	for k := range victims {
		if goneAfter[k] > 0 {
			exp = append(exp, ms(goneAfter[k]))
			fromLast = append(fromLast, ms(closedAt[k].Add(goneAfter[k]).Sub(lastAt[k])))
		}
	}
	sort.Float64s(exp)
	sort.Float64s(fromLast)
	res.FromLastAllMS = fromLast
	if len(fromLast) > 0 {
		res.FromLastMinMS, res.FromLastP50MS, res.FromLastMaxMS = fromLast[0], fromLast[len(fromLast)/2], fromLast[len(fromLast)-1]
	}
	res.Expired = len(exp)
	res.ExpiryAllMS = exp
	if len(exp) > 0 {
		res.ExpiryMinMS, res.ExpiryP50MS, res.ExpiryMaxMS = exp[0], exp[len(exp)/2], exp[len(exp)-1]
	}
	note("expiry: %d of %d aborted sessions' znodes gone, min %.2fs p50 %.2fs max %.2fs after the close, "+
		"min %.2fs p50 %.2fs max %.2fs after the last ping (timeout %dms)",
		res.Expired, res.Aborted, res.ExpiryMinMS/1000, res.ExpiryP50MS/1000, res.ExpiryMaxMS/1000,
		res.FromLastMinMS/1000, res.FromLastP50MS/1000, res.FromLastMaxMS/1000, res.TimeoutMS)

	// Clean up: closeSession for the rest, ramped, then wait for /sessions
	// to empty so that the next system is measured on a quiet machine.
	close(stopPing)
	tc := time.Now()
	tick = time.NewTicker(time.Second / time.Duration(2*cfg.rampPerSec))
	var cwg sync.WaitGroup
	for _, rs := range sess {
		if rs == nil || rs.closing.Load() {
			continue
		}
		<-tick.C
		cwg.Go(func() { rs.closeSession(10 * time.Second) })
	}
	tick.Stop()
	cwg.Wait()
	for time.Since(tc) < 2*time.Minute {
		kids, _, err := adm.Children("/sessions")
		if err == nil && len(kids) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.LeftAfterMS = ms(time.Since(tc))
	res.LoadAvg = loadAvg()
	note("cleaned up in %.1fs", res.LeftAfterMS/1000)
	return res
}

func countLost(sess []*rawSession) int {
	n := 0
	for _, rs := range sess {
		if rs != nil && rs.lost.Load() != 0 {
			n++
		}
	}
	return n
}
