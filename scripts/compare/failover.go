package main

// compare failover: the longest gap between acknowledged writes after kill -9
// of the leader (issue 16, item 6), for corral, etcd and ZooKeeper in the same
// run. scripts/compare.sh failover starts the three clusters and calls it.
//
//	compare failover -trials 10 -corral URL,URL,URL -etcd H:P,H:P,H:P -zk H:P,H:P,H:P
//
// Each trial, for each system in turn (corral, etcd, ZooKeeper, corral, ...,
// so that drift on the machine hits all three alike):
//  1. wait until all three nodes answer and agree on one leader;
//  2. start 8 writers, each with its own client listing every node, each
//     overwriting its own key (ZooKeeper: setData of its own znode) in a
//     loop, every operation with a 250 ms timeout;
//  3. after 3 s, find the leader, read how it was started (/proc argv,
//     working directory, environment, stdout) and SIGKILL it;
//  4. keep writing 5 s more, then stop;
//  5. start the killed node again the same way and wait until the cluster
//     is healthy again.
//
// The gap of a trial is the one `corral bench kv --kill-leader-every`
// reports: the longest interval between consecutive acknowledgements (all 8
// writers merged) from the last acknowledgement before the kill to the end
// of the window. Only a write acknowledged within its 250 ms counts.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// gapSystem is one of the three clusters under test.
type gapSystem interface {
	name() string
	// nodes is each node's status; err only when the check itself cannot run.
	nodes(ctx context.Context) []nodeStatus
	// prepare makes what the writers need (ZooKeeper: their znodes).
	prepare(ctx context.Context, writers int) error
	newGapWriter(i int, timeout time.Duration) (gapWriter, error)
	close()
}

// gapWriter overwrites its own key once.
type gapWriter interface {
	put(ctx context.Context, value []byte) error
	close()
}

// nodeStatus is what one node said about itself.
type nodeStatus struct {
	endpoint string
	err      error
	leader   bool   // this node is the leader
	view     string // the leader this node knows ("" when none); compared across nodes
}

// healthy reports nil when every node answered, exactly one is the leader and
// all name the same leader.
func healthy(st []nodeStatus) error {
	leaders, view := 0, ""
	for i, s := range st {
		if s.err != nil {
			return fmt.Errorf("%s: %w", s.endpoint, s.err)
		}
		if s.view == "" {
			return fmt.Errorf("%s knows no leader", s.endpoint)
		}
		if i > 0 && s.view != view {
			return fmt.Errorf("%s names leader %s, another node %s", s.endpoint, s.view, view)
		}
		view = s.view
		if s.leader {
			leaders++
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d nodes say they lead", leaders)
	}
	return nil
}

func waitHealthy(ctx context.Context, sys gapSystem, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := healthy(sys.nodes(c))
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy within %s: %w", sys.name(), limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// findLeader asks the nodes until one says it leads.
func findLeader(ctx context.Context, sys gapSystem, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		c, cancel := context.WithTimeout(ctx, time.Second)
		st := sys.nodes(c)
		cancel()
		for _, s := range st {
			if s.err == nil && s.leader {
				return s.endpoint, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s: no node said it leads within %s", sys.name(), limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// trialResult is one trial of one system.
type trialResult struct {
	System   string    `json:"system"`
	Trial    int       `json:"trial"`
	Leader   string    `json:"leader"`    // the endpoint of the node killed
	PID      int       `json:"pid"`       // its pid
	KilledAt time.Time `json:"killed_at"` // when SIGKILL was sent
	// GapMS is the longest interval between consecutive acknowledgements from the last one before the kill to the
	// end of the window: the measure. SpanMS is the interval that contains the kill instant (last ack before it to
	// first ack after it); it can be a few ms when answers the old leader sent just before it died are read just
	// after, so it is kept only as a detail.
	GapMS   float64 `json:"gap_ms"`
	SpanMS  float64 `json:"span_ms"`
	Resumed bool    `json:"resumed"` // some write was acknowledged after the kill, within the window
	Acks    int     `json:"acks"`
	Errors  int     `json:"errors"`
	// BackMS: from the restart of the killed node until all three nodes were healthy again.
	BackMS  float64 `json:"back_ms"`
	LoadAvg string  `json:"loadavg"` // /proc/loadavg at the end of the trial
}

type failoverConfig struct {
	trials         int
	writers        int
	timeout        time.Duration
	before, after  time.Duration
	valueSize      int
	pidFile        string
	jsonFile       string
	healthyLimit   time.Duration
	settle         time.Duration
	corral, etcdEP string
	zkEP           string
}

func runFailover(args []string) error {
	flags := flag.NewFlagSet("compare failover", flag.ContinueOnError)
	var cfg failoverConfig
	flags.IntVar(&cfg.trials, "trials", 10, "trials per system")
	flags.IntVar(&cfg.writers, "writers", 8, "concurrent writers, each with its own client listing every node")
	flags.DurationVar(&cfg.timeout, "timeout", 250*time.Millisecond, "timeout of each write")
	flags.DurationVar(&cfg.before, "before", 3*time.Second, "steady writes before the kill")
	flags.DurationVar(&cfg.after, "after", 5*time.Second, "writes after the kill")
	flags.IntVar(&cfg.valueSize, "value-size", 256, "bytes per value")
	flags.StringVar(&cfg.pidFile, "pid-file", "", "append the pid of every node this run restarts to this file (for the caller's cleanup)")
	flags.StringVar(&cfg.jsonFile, "json", "", "also write every trial as JSON to this file")
	flags.DurationVar(&cfg.healthyLimit, "healthy-within", 60*time.Second, "how long a cluster may take to become healthy")
	flags.DurationVar(&cfg.settle, "settle", time.Second, "pause after the cluster is healthy again, before the next trial")
	flags.StringVar(&cfg.corral, "corral", "", "corral's HTTP endpoints, comma-separated (empty: skip corral)")
	flags.StringVar(&cfg.etcdEP, "etcd", "", "etcd's client endpoints host:port, comma-separated (empty: skip etcd)")
	flags.StringVar(&cfg.zkEP, "zk", "", "ZooKeeper's client endpoints host:port, comma-separated (empty: skip ZooKeeper)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if cfg.trials < 1 || cfg.trials > 100 || cfg.writers < 1 || cfg.writers > 256 || cfg.timeout <= 0 || cfg.timeout > 10*time.Second ||
		cfg.before < 500*time.Millisecond || cfg.before > time.Minute || cfg.after < time.Second || cfg.after > time.Minute ||
		cfg.valueSize < 1 || cfg.valueSize > 1<<20 || cfg.healthyLimit <= 0 || cfg.healthyLimit > 10*time.Minute ||
		cfg.settle < 0 || cfg.settle > time.Minute {
		return errors.New("want 1-100 trials, 1-256 writers, a timeout up to 10s, -before 0.5s-1m, -after 1s-1m, " +
			"a value of 1 byte to 1 MiB, -healthy-within up to 10m and -settle up to 1m")
	}
	var systems []gapSystem
	defer func() {
		for _, s := range systems {
			s.close()
		}
	}()
	if cfg.corral != "" {
		systems = append(systems, newCorralGap(strings.Split(cfg.corral, ",")))
	}
	if cfg.etcdEP != "" {
		s, err := newEtcdGap(strings.Split(cfg.etcdEP, ","))
		if err != nil {
			return err
		}
		systems = append(systems, s)
	}
	if cfg.zkEP != "" {
		systems = append(systems, newZKGap(strings.Split(cfg.zkEP, ",")))
	}
	if len(systems) == 0 {
		return errors.New("give at least one of -corral, -etcd, -zk")
	}
	ctx := context.Background()
	fmt.Printf("# failover: %d trials, %d writers, %s per write, kill -9 of the leader after %s, %s more writes; load at start: %s\n",
		cfg.trials, cfg.writers, cfg.timeout, cfg.before, cfg.after, loadAvg())
	var results []trialResult
	var runErr error
trials:
	for t := 1; t <= cfg.trials; t++ {
		for _, sys := range systems {
			r, err := runTrial(ctx, sys, t, cfg)
			if err != nil {
				runErr = fmt.Errorf("trial %d of %s: %w", t, sys.name(), err)
				fmt.Fprintln(os.Stderr, "compare failover:", runErr)
				break trials
			}
			results = append(results, r)
			gap := fmt.Sprintf("%.3fs", r.GapMS/1000)
			if !r.Resumed {
				gap = "> " + gap + " (no write acknowledged after the kill)"
			}
			fmt.Printf("trial %-2d %-6s killed leader %s (pid %d): gap %s (interval around the kill instant %.3fs); %d writes, %d errors; "+
				"healthy again %.1fs after the restart; load %s\n", t, r.System, r.Leader, r.PID, gap, r.SpanMS/1000,
				r.Acks, r.Errors, r.BackMS/1000, r.LoadAvg)
		}
	}
	fmt.Printf("# load at end: %s\n\n", loadAvg())
	printGapTable(os.Stdout, systems, results)
	if cfg.jsonFile != "" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return runErr
}

// printGapTable prints the markdown table: per system the median, p90 and max gap and every trial's gap.
func printGapTable(w io.Writer, systems []gapSystem, results []trialResult) {
	fmt.Fprintln(w, "| system | trials | median | p90 | max | each trial (s) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
	for _, sys := range systems {
		var gaps []float64
		var each []string
		for _, r := range results {
			if r.System != sys.name() {
				continue
			}
			gaps = append(gaps, r.GapMS/1000)
			s := fmt.Sprintf("%.2f", r.GapMS/1000)
			if !r.Resumed {
				s = ">" + s
			}
			each = append(each, s)
		}
		if len(gaps) == 0 {
			continue
		}
		sorted := slices.Clone(gaps)
		slices.Sort(sorted)
		fmt.Fprintf(w, "| %s | %d | %.3f s | %.3f s | %.3f s | %s |\n", sys.name(), len(gaps), medianF(sorted),
			sorted[int(math.Ceil(0.9*float64(len(sorted))))-1], sorted[len(sorted)-1], strings.Join(each, ", "))
	}
}

func medianF(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// runTrial runs one trial of sys (see the file comment).
func runTrial(ctx context.Context, sys gapSystem, trial int, cfg failoverConfig) (trialResult, error) {
	res := trialResult{System: sys.name(), Trial: trial}
	if err := waitHealthy(ctx, sys, cfg.healthyLimit); err != nil {
		return res, err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := sys.prepare(pctx, cfg.writers)
	cancel()
	if err != nil {
		return res, fmt.Errorf("prepare: %w", err)
	}
	ws := make([]gapWriter, 0, cfg.writers)
	closeAll := func() {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(w.close)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a close that hangs must not hang the run
		}
	}
	for i := 0; i < cfg.writers; i++ {
		w, err := sys.newGapWriter(i, cfg.timeout)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("connect writer %d: %w", i, err)
		}
		ws = append(ws, w)
	}
	value := bytes.Repeat([]byte("v"), cfg.valueSize)
	var stop atomic.Bool
	acks := make([][]time.Time, len(ws))
	errs := make([]int, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			for !stop.Load() {
				t0 := time.Now()
				octx, cancel := context.WithTimeout(ctx, cfg.timeout)
				err := w.put(octx, value)
				cancel()
				now := time.Now()
				if err == nil && now.Sub(t0) <= cfg.timeout {
					acks[i] = append(acks[i], now)
					continue
				}
				errs[i]++
				// A refusal that comes back at once would otherwise spin a core of this 2-core machine.
				if now.Sub(t0) < 5*time.Millisecond {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	stopWriters := func() time.Time {
		end := time.Now()
		stop.Store(true)
		wg.Wait()
		return end
	}
	time.Sleep(cfg.before)

	leader, err := findLeader(ctx, sys, 5*time.Second)
	if err != nil {
		stopWriters()
		closeAll()
		return res, err
	}
	pid, err := listenerPID(leader)
	if err != nil {
		stopWriters()
		closeAll()
		return res, fmt.Errorf("find the process of leader %s: %w", leader, err)
	}
	launch, err := readProcLaunch(pid)
	if err != nil {
		stopWriters()
		closeAll()
		return res, fmt.Errorf("read how leader %s (pid %d) was started: %w", leader, pid, err)
	}
	bin, err := launch.binary()
	if err != nil {
		stopWriters()
		closeAll()
		return res, err
	}
	res.Leader, res.PID = leader, pid
	res.KilledAt = time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		stopWriters()
		closeAll()
		return res, fmt.Errorf("kill leader %s (pid %d): %w", leader, pid, err)
	}
	time.Sleep(time.Until(res.KilledAt.Add(cfg.after)))
	end := stopWriters()
	closeAll()

	// Start the killed node again, once it is gone for good (its threads hold its files and ports until then).
	if _, err := waitProcessGone(pid, 30*time.Second); err != nil {
		return res, err
	}
	newPID, err := relaunch(launch, bin, "failover-"+sys.name(),
		fmt.Sprintf("restarted by scripts/compare failover after trial %d (old pid %d)", trial, pid), cfg.pidFile)
	if err != nil {
		return res, fmt.Errorf("restart %s from %s: %w; the cluster is one node short", leader, bin, err)
	}
	restarted := time.Now()
	if err := waitHealthy(ctx, sys, cfg.healthyLimit); err != nil {
		return res, fmt.Errorf("after restarting %s as pid %d: %w", leader, newPID, err)
	}
	res.BackMS = ms(time.Since(restarted))
	time.Sleep(cfg.settle)

	var all []time.Time
	for i := range acks {
		all = append(all, acks[i]...)
		res.Errors += errs[i]
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	res.Acks = len(all)
	gap, span, resumed := writeGap(all, res.KilledAt, end)
	res.GapMS, res.SpanMS, res.Resumed = ms(gap), ms(span), resumed
	res.LoadAvg = loadAvg()
	return res, nil
}

// writeGap is, over acks (ascending), the longest interval between consecutive acknowledgements from the last one
// before kill until end, and the interval that contains kill. With no acknowledgement after kill both run to end.
func writeGap(acks []time.Time, kill, end time.Time) (gap, span time.Duration, resumed bool) {
	first, _ := slices.BinarySearchFunc(acks, kill, func(a, t time.Time) int { return a.Compare(t) })
	prev := kill
	if first > 0 {
		prev = acks[first-1]
	}
	for _, a := range acks[first:] {
		if a.After(end) {
			break
		}
		if !resumed {
			span = a.Sub(prev)
		}
		resumed = true
		gap = max(gap, a.Sub(prev))
		prev = a
	}
	if !resumed {
		gap = end.Sub(prev)
		span = gap
	}
	return gap, span, resumed
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
