package bench

// Killing the leader controller on a schedule and starting it again the
// same way (--kill-leader-every, --kills): shared by bench workers
// (workers_failover.go) and bench kv (kv_failover.go). The bench reads how
// the leader was started from /proc, so it must run on the controllers'
// machine.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/urfave/cli/v2"
)

// defaultKills is --kills when only --kill-leader-every is given.
const defaultKills = 3

func (e Env) failoverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "kill-leader-every", EnvVars: e.EnvVars("kill-leader-every"), DefaultText: "0s: never",
			Usage: "while measuring, SIGKILL the leader controller this often, restart it with the same command line, " +
				"working directory and environment, and report what each failover cost; the leader must " +
				"run on this machine"},
		&cli.IntFlag{Name: "kills", EnvVars: e.EnvVars("kills"), DefaultText: fmt.Sprintf("%d with --kill-leader-every", defaultKills),
			Usage: "how many times to kill the leader; --duration must leave a whole interval after the last kill"},
	}
}

// failoverConfig is --kill-leader-every and --kills.
type failoverConfig struct {
	every time.Duration // 0: no kills
	kills int
}

func (f failoverConfig) on() bool { return f.every > 0 }

// parseFailover checks --kill-leader-every and --kills against --duration: the kills fall at every, 2 x every, ...
// after the measurement starts, and the last one needs a whole interval after it to be measured.
func parseFailover(every time.Duration, kills int, killsSet bool, duration time.Duration) (failoverConfig, error) {
	switch {
	case every < 0:
		return failoverConfig{}, fmt.Errorf("--kill-leader-every must not be negative, got %s", every)
	case every == 0 && killsSet:
		return failoverConfig{}, fmt.Errorf("--kills %d needs --kill-leader-every (how often to kill the leader), "+
			"e.g. --kill-leader-every 10s", kills)
	case every == 0:
		return failoverConfig{}, nil
	}
	if !killsSet {
		kills = defaultKills
	}
	if kills < 1 {
		return failoverConfig{}, fmt.Errorf("--kills must be at least 1, got %d", kills)
	}
	if need := every * time.Duration(kills+1); duration < need {
		return failoverConfig{}, fmt.Errorf("--duration %s is too short for --kills %d every %s: the kills fall at "+
			"%s, %s, ... after the measurement starts and the last one needs a whole interval after it; "+
			"use --duration %s or more", duration, kills, every, every, 2*every, need)
	}
	return failoverConfig{every: every, kills: kills}, nil
}

// killRecord is one kill of the leader and its restart.
type killRecord struct {
	n         int
	leaderID  uint64
	pid       int
	endpoint  string
	at        time.Time     // when SIGKILL was sent
	exitedIn  time.Duration // from SIGKILL until /proc/PID was gone
	newPID    int
	logPath   string
	backIn    time.Duration // from SIGKILL until the restarted controller answered again
	newLeader uint64        // the leader the restarted controller named
	standbys  string        // the workers' standby connections per controller just before the kill, when known
}

// ctrlFencings is every controller's corral_workers_fencings_total (all reasons), with its pid: a counter restarts
// from zero with its process.
type ctrlFencings map[string]ctrlCount

type ctrlCount struct {
	pid      int
	fencings float64
}

// since is how many fencings the controllers counted between prev and s. A controller whose pid changed started
// from zero; one that did not answer in s (killed, say) contributes nothing.
func (s ctrlFencings) since(prev ctrlFencings) float64 {
	var n float64
	for ep, c := range s {
		if p, ok := prev[ep]; ok && p.pid == c.pid {
			n += c.fencings - p.fencings
		} else {
			n += c.fencings
		}
	}
	return n
}

// leaderKiller kills the leader on schedule during the measurement (see killAll).
type leaderKiller struct {
	e         Env
	c         *cli.Context
	cfg       failoverConfig
	out       io.Writer
	endpoints []string
	hc        *http.Client
	kills     []killRecord
	ctrl      []ctrlFencings // the controllers' counters at the start, just before each kill and at the end
	err       error          // why the kills stopped early
	restarted []int          // pids of the controllers this run restarted
	// standbys, when set, says how many workers hold a standby connection to each controller: a new leader without
	// them must take a handshake from every worker lacking one (docs/ARCHITECTURE.md, "What a failover costs a
	// worker").
	standbys func() string
}

func (e Env) newLeaderKiller(c *cli.Context, cfg failoverConfig) *leaderKiller {
	return &leaderKiller{e: e, c: c, cfg: cfg, out: c.App.Writer, endpoints: splitList(c.String("endpoints")),
		hc: &http.Client{Timeout: 5 * time.Second}}
}

// checkKillable refuses, before any worker starts, a leader this machine cannot kill and restart.
func checkKillable(l *benchLeader) error {
	if !l.local {
		return notLocalError(l)
	}
	if _, err := readProcLaunch(l.pid); err != nil {
		return fmt.Errorf("--kill-leader-every: cannot read how the leader was started: %w; run the bench as the "+
			"user that runs the controllers", err)
	}
	return nil
}

func notLocalError(l *benchLeader) error {
	return fmt.Errorf("--kill-leader-every: the leader (controller %d at %s, pid %d) does not run on this machine: "+
		"the bench kills and restarts the leader's process itself, so run it on the controllers' machine "+
		"(e.g. against scripts/cluster.sh start), or drop --kill-leader-every", l.id, l.endpoint, l.pid)
}

// killAll kills the leader at t0 + every, t0 + 2 x every, ... and restarts it each time. It returns after the last
// kill's restart, or early when ctx ends or a kill fails (then k.err says why).
func (k *leaderKiller) killAll(ctx context.Context, t0 time.Time) {
	k.ctrl = []ctrlFencings{k.sampleControllers(ctx)}
	for n := 1; n <= k.cfg.kills; n++ {
		t := time.NewTimer(time.Until(t0.Add(time.Duration(n) * k.cfg.every)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		rec, err := k.killOnce(ctx, n)
		if !rec.at.IsZero() {
			k.kills = append(k.kills, rec)
			k.printKill(rec, t0)
		}
		if err != nil {
			k.err = fmt.Errorf("kill %d of %d: %w", n, k.cfg.kills, err)
			fmt.Fprintf(k.out, "kill %d: %v; no more kills\n", n, err)
			return
		}
	}
}

func (k *leaderKiller) printKill(r killRecord, t0 time.Time) {
	msg := fmt.Sprintf("kill %d at +%s: SIGKILL to leader %d (pid %d)", r.n, r.at.Sub(t0).Round(100*time.Millisecond),
		r.leaderID, r.pid)
	if r.exitedIn > 0 {
		msg += fmt.Sprintf(", gone after %s", formatLatency(r.exitedIn))
	}
	if r.newPID > 0 {
		msg += fmt.Sprintf("; restarted as pid %d (output: %s)", r.newPID, r.logPath)
	}
	if r.backIn > 0 {
		msg += fmt.Sprintf(", answering again %s after the kill; leader now %d", r.backIn.Round(time.Millisecond),
			r.newLeader)
	}
	if r.standbys != "" {
		msg += "; workers with a standby to each controller before the kill: " + r.standbys
	}
	fmt.Fprintln(k.out, msg)
}

// killOnce finds the leader, reads how it was started, kills it, waits for it to be gone and starts it again.
// Once the SIGKILL is sent it finishes the restart even if ctx ends, so that the cluster gets its controller back.
func (k *leaderKiller) killOnce(ctx context.Context, n int) (killRecord, error) {
	rec := killRecord{n: n}
	lead, err := k.waitLeader(ctx, k.cfg.every)
	if err != nil {
		return rec, err
	}
	rec.leaderID, rec.pid, rec.endpoint = lead.id, lead.pid, lead.endpoint
	if !lead.local {
		return rec, notLocalError(lead)
	}
	launch, err := readProcLaunch(lead.pid)
	if err != nil {
		return rec, fmt.Errorf("read how leader %d (pid %d) was started: %w", lead.id, lead.pid, err)
	}
	bin, err := launch.binary()
	if err != nil {
		return rec, err
	}
	before := k.sampleControllers(ctx)
	if k.standbys != nil {
		rec.standbys = k.standbys()
	}
	rec.at = time.Now()
	if err := syscall.Kill(lead.pid, syscall.SIGKILL); err != nil {
		rec.at = time.Time{}
		return rec, fmt.Errorf("kill leader %d (pid %d): %w", lead.id, lead.pid, err)
	}
	k.ctrl = append(k.ctrl, before)
	bg := context.WithoutCancel(ctx)
	if rec.exitedIn, err = waitProcessGone(bg, lead.pid, 10*time.Second); err != nil {
		return rec, err
	}
	logf, err := openRestartLog(restartLogPath(launch, k.e.EnvVars("data-dir"), lead.id),
		filepath.Join(os.TempDir(), fmt.Sprintf("corral-bench-restart-node-%d.log", lead.id)))
	if err != nil {
		return rec, fmt.Errorf("restart controller %d: %w; the cluster is one controller short", lead.id, err)
	}
	rec.logPath = logf.Name()
	fmt.Fprintf(logf, "=== %s: restarted by corral bench after kill %d (old pid %d): %s\n",
		time.Now().Format(time.RFC3339Nano), n, lead.pid, strings.Join(launch.argv, " "))
	rec.newPID, err = startDetached(launch, bin, logf)
	_ = logf.Close() // the child has its own copy
	if err != nil {
		return rec, fmt.Errorf("restart controller %d from %s: %w; the cluster is one controller short", lead.id, bin, err)
	}
	k.restarted = append(k.restarted, rec.newPID)
	st, err := k.waitBack(bg, lead.endpoint, lead.id, max(k.cfg.every, 5*time.Second))
	if err != nil {
		return rec, fmt.Errorf("controller %d (restarted as pid %d) %w; see %s", lead.id, rec.newPID, err, rec.logPath)
	}
	rec.backIn, rec.newLeader = time.Since(rec.at), st.LeaderID
	return rec, nil
}

// waitLeader asks the endpoints until one is the leader (an election may be running).
func (k *leaderKiller) waitLeader(ctx context.Context, limit time.Duration) (*benchLeader, error) {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		lead, err := k.e.findLeader(ctx, k.c)
		if err == nil || time.Now().After(deadline) {
			return lead, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitBack polls the restarted controller's endpoint until it answers as node id and names a leader.
func (k *leaderKiller) waitBack(ctx context.Context, endpoint string, id uint64, limit time.Duration) (*client.ClusterStatus, error) {
	cl, err := client.New(client.Config{Endpoints: []string{endpoint}, Token: k.c.String("token"), Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := cl.Cluster(ctx)
		if err == nil && st.NodeID == id && st.LeaderID != 0 {
			return st, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("answers as node %d with leader %d", st.NodeID, st.LeaderID)
			}
			return nil, fmt.Errorf("did not rejoin within %s (last: %v)", limit, err)
		}
		<-tick.C
	}
}

// sampleControllers reads every endpoint's pid and fencing counter; endpoints that do not answer are left out.
func (k *leaderKiller) sampleControllers(ctx context.Context) ctrlFencings {
	out := ctrlFencings{}
	for _, ep := range k.endpoints {
		cl, err := client.New(client.Config{Endpoints: []string{ep}, Token: k.c.String("token"), Timeout: 2 * time.Second})
		if err != nil {
			continue
		}
		st, err := cl.Cluster(ctx)
		if err != nil {
			continue
		}
		m, err := (&benchLeader{endpoint: cl.Endpoints()[0], hc: k.hc, token: k.c.String("token")}).metrics()
		if err != nil {
			continue
		}
		var n float64
		for name, v := range m {
			if name == "corral_workers_fencings_total" || strings.HasPrefix(name, "corral_workers_fencings_total{") {
				n += v
			}
		}
		out[ep] = ctrlCount{pid: st.PID, fencings: n}
	}
	return out
}

// procLaunch is how a process was started, read from /proc before it is killed so that it can be started alike.
type procLaunch struct {
	argv []string
	dir  string
	env  []string
	exe  string // /proc/PID/exe: the binary when argv[0] cannot be found
}

func readProcLaunch(pid int) (procLaunch, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		return procLaunch{}, err
	}
	environ, err := os.ReadFile(proc + "/environ")
	if err != nil {
		return procLaunch{}, err
	}
	dir, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return procLaunch{}, err
	}
	l := procLaunch{argv: splitNUL(cmdline), dir: dir, env: splitNUL(environ)}
	l.exe, _ = os.Readlink(proc + "/exe")
	if len(l.argv) == 0 {
		return procLaunch{}, fmt.Errorf("%s/cmdline is empty (a zombie or a kernel thread)", proc)
	}
	return l, nil
}

// splitNUL splits /proc/PID/cmdline or environ: NUL-terminated strings.
func splitNUL(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// binary is the program to start again: argv[0] resolved like the shell did (against the process's working
// directory and its own PATH), else what /proc/PID/exe pointed to if that still exists.
func (l procLaunch) binary() (string, error) {
	a0 := l.argv[0]
	var cands []string
	switch {
	case filepath.IsAbs(a0):
		cands = []string{a0}
	case strings.Contains(a0, "/"):
		cands = []string{filepath.Join(l.dir, a0)}
	default:
		for _, d := range filepath.SplitList(lookupEnv(l.env, "PATH")) {
			if d == "" {
				d = "."
			}
			if !filepath.IsAbs(d) {
				d = filepath.Join(l.dir, d)
			}
			cands = append(cands, filepath.Join(d, a0))
		}
	}
	if l.exe != "" && !strings.HasSuffix(l.exe, " (deleted)") {
		cands = append(cands, l.exe)
	}
	for _, p := range cands {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("cannot find the leader's program %q (started in %s) to restart it", a0, l.dir)
}

// lookupEnv returns the value of key in a KEY=VALUE list ("" when absent); the last one wins, as for getenv.
func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// flagValue returns the value of --name (or -name) in argv, as --name=V or --name V; "" when absent.
func flagValue(argv []string, name string) string {
	for i, a := range argv {
		if a == "--" {
			break
		}
		f, ok := strings.CutPrefix(a, "--")
		if !ok {
			if f, ok = strings.CutPrefix(a, "-"); !ok {
				continue
			}
		}
		if k, v, ok := strings.Cut(f, "="); ok && k == name {
			return v
		} else if f == name && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}

// restartLogPath is where a restarted controller's output goes: next to its data dir (from --data-dir or its
// environment variable) as DATADIR.bench-restart.log, or in the temporary directory when the data dir is unknown.
func restartLogPath(l procLaunch, dataDirEnv []string, id uint64) string {
	dataDir := flagValue(l.argv, "data-dir")
	for _, name := range dataDirEnv {
		if dataDir == "" {
			dataDir = lookupEnv(l.env, name)
		}
	}
	if dataDir == "" {
		return filepath.Join(os.TempDir(), fmt.Sprintf("corral-bench-restart-node-%d.log", id))
	}
	if !filepath.IsAbs(dataDir) {
		dataDir = filepath.Join(l.dir, dataDir)
	}
	dataDir = filepath.Clean(dataDir)
	return filepath.Join(filepath.Dir(dataDir), filepath.Base(dataDir)+".bench-restart.log")
}

// openRestartLog opens path for appending, or fallback when path cannot be (a data dir's parent may not be
// writable).
func openRestartLog(path, fallback string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		return f, nil
	}
	f, err2 := os.OpenFile(fallback, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err2 != nil {
		return nil, fmt.Errorf("open a log for its output: %w", errors.Join(err, err2))
	}
	return f, nil
}

// startDetached starts bin again with l's argv, directory and environment, in a session of its own (a ^C to the
// bench does not reach it), with its output to log. The child outlives the bench; a goroutine reaps it if it
// exits first.
func startDetached(l procLaunch, bin string, log *os.File) (int, error) {
	cmd := &exec.Cmd{Path: bin, Args: l.argv, Dir: l.dir, Env: l.env, Stdout: log, Stderr: log,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// waitProcessGone polls /proc/PID until the process is gone (see processGone).
func waitProcessGone(ctx context.Context, pid int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if processGone(pid) {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("pid %d still runs %s after SIGKILL", pid, limit)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// processGone: no such process, or a zombie whose threads have all exited. A killed multi-threaded process shows its
// main thread as a zombie while the others are still exiting and still hold its files (a restart then finds the data
// dir locked), so a zombie counts only once /proc/PID/task lists it alone.
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	if st := procState(b); st != 'Z' && st != 'X' {
		return false
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err != nil || len(tasks) <= 1
}

// procState is the state letter of a /proc/PID/stat line (after the command name, which may hold spaces and ")").
func procState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}
