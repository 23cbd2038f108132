// Package executor runs a worker's allocations as real processes, each
// under its own `corral supervise` process (a task never outlives its
// worker's supervision), with restart policies, cgroup v2 limits and
// rotating log files. It converges to the complete desired set it is
// given and reports each allocation's state changes.
package executor

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// Alloc is one allocation the leader wants on this worker.
type Alloc struct {
	ID         string
	Job        string
	Type       string // "service" | "batch"
	Desired    string // metadata.DesiredRun or metadata.DesiredStop
	RestartGen uint64 // grows when a user asks for a restart
	Task       metadata.Task
	Restart    metadata.RestartPolicy
}

// Report is a state change to send to the leader.
type Report struct {
	ID       string
	State    metadata.AllocState // starting, running, exited, failed, stopped or lost
	ExitCode int                 // for exited/failed: the task's exit code (-1 killed by a signal / never started)
	Restarts int                 // restarts done on this worker so far
	Message  string              // human reason: "restarting in 2s (attempt 1 of 3)", "exec: no such file", "stopped by request"...
	At       time.Time
}

// Config configures the worker-side executor of allocations.
type Config struct {
	Dir            string        // root for per-allocation dirs: Dir/<alloc id>/{stdout.log,stderr.log}
	SupervisorCmd  []string      // argv prefix that runs a supervisor, e.g. {os.Executable(), "supervise"}
	RefreshEvery   time.Duration // how often to write "refresh" to each supervisor
	RefreshTimeout time.Duration // passed to supervisors
	LostGrace      time.Duration // passed to supervisors (SIGTERM->SIGKILL grace when supervision is lost)
	MaxLogBytes    int64
	KeepLogs       int
	LogRetention   time.Duration // alloc dirs of terminal allocations are removed after this long (0 = keep forever)
	Report         func(Report)  // called on executor goroutines; must not block for long
	// MayRefresh, when set, gates every refresh: the worker allows them
	// only while its session is demonstrably alive, so a worker whose loop
	// hangs while these goroutines run on still lets its tasks die.
	MayRefresh func() bool
	// CgroupRoot, when set, is the cgroup v2 directory under which every
	// task gets its own cgroup with its job's cpu and memory as limits.
	CgroupRoot string
	// TaskUser is, on a worker running as root, the user a task runs as
	// when its job names none; "" means the worker's own user (a real
	// worker passes "nobody"). AllowedTaskUsers are the other users a job
	// may name (task.user). A worker that is not root runs every task as
	// itself and fails a job naming another user (isolation.go).
	TaskUser         string
	AllowedTaskUsers []string
	// AllowedCommands, when not empty, are the globs (path.Match) a task's
	// resolved command path must match; empty allows every command.
	AllowedCommands []string
	Logger          *slog.Logger
}

// Defaults of Config.
const (
	execDefaultRefreshEvery = 500 * time.Millisecond
	execDefaultLostGrace    = time.Second
	execDefaultMaxLogBytes  = 10 << 20
	execDefaultKeepLogs     = 3
	execDefaultKillTimeout  = 5 * time.Second
	execKillAllWait         = 5 * time.Second
)

// Executor runs the allocations the leader assigns to this worker, each
// under its own `corral supervise` process, so that a task never outlives
// the worker's supervision (see SupervisorConfig).
//
// The leader is level-triggered: Apply receives the complete desired set
// every time and the executor converges to it. One goroutine per
// allocation (execRunner) owns that allocation's processes; Apply only
// records what is wanted and wakes it, so it never waits for a process.
type Executor struct {
	cfg   Config
	log   *slog.Logger
	users taskUserPolicy

	mu      sync.Mutex
	runners map[string]*execRunner
	// dying holds runners forgotten by KillAll whose supervisor may still
	// be exiting: a new allocation with the same id waits for it, so two
	// processes never run for one id.
	dying  map[string]*execRunner
	closed bool
	wg     sync.WaitGroup // every executor goroutine
}

// sweepOldAllocDirs removes the allocation dirs a previous worker process
// left behind once their logs are older than the retention: this process
// never knew those allocations, so nothing else would remove them.
func sweepOldAllocDirs(dir string, retention time.Duration, now time.Time, log *slog.Logger) {
	if retention <= 0 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !e.IsDir() || now.Sub(info.ModTime()) < retention {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			log.Warn("could not remove an old allocation dir", "dir", e.Name(), "err", err)
		}
	}
}

func New(cfg Config) (*Executor, error) {
	if cfg.Dir == "" {
		return nil, errors.New("executor: Dir is required")
	}
	if len(cfg.SupervisorCmd) == 0 || cfg.SupervisorCmd[0] == "" {
		return nil, errors.New("executor: SupervisorCmd is required")
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = execDefaultRefreshEvery
	}
	if cfg.RefreshTimeout <= 0 {
		cfg.RefreshTimeout = max(2*time.Second, 4*cfg.RefreshEvery)
	}
	if cfg.RefreshTimeout <= cfg.RefreshEvery {
		// Supervisors would kill healthy tasks between two refreshes.
		return nil, fmt.Errorf("executor: refresh timeout %v must be longer than the refresh interval %v",
			cfg.RefreshTimeout, cfg.RefreshEvery)
	}
	if cfg.LostGrace <= 0 {
		cfg.LostGrace = execDefaultLostGrace
	}
	if cfg.MaxLogBytes <= 0 {
		cfg.MaxLogBytes = execDefaultMaxLogBytes
	}
	if cfg.KeepLogs <= 0 {
		cfg.KeepLogs = execDefaultKeepLogs
	}
	if cfg.Report == nil {
		cfg.Report = func(Report) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Supervisors run in their alloc dir, so every path handed to them
	// must be absolute.
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	// Tasks must not reach the allocation root: 0700 even if it existed.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	if err := ValidateGlobs(cfg.AllowedCommands); err != nil {
		return nil, fmt.Errorf("executor: allowed commands: %w", err)
	}
	users := taskUserPolicy{root: os.Geteuid() == 0, self: currentUserName(), def: cfg.TaskUser, allowed: cfg.AllowedTaskUsers}
	if users.root {
		// The default user must exist, or no task could run.
		def, _ := users.choose("")
		if _, err := users.credential(def); err != nil {
			return nil, fmt.Errorf("executor: %w", err)
		}
	}
	cfg.Dir = dir
	sweepOldAllocDirs(dir, cfg.LogRetention, time.Now(), cfg.Logger)
	return &Executor{
		cfg: cfg, log: cfg.Logger, users: users,
		runners: make(map[string]*execRunner),
		dying:   make(map[string]*execRunner),
	}, nil
}

// Apply replaces the desired set. It returns without waiting for any
// process; the runners converge in the background and report.
func (e *Executor) Apply(allocs []Alloc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	seen := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		if seen[a.ID] {
			e.log.Warn("executor: allocation listed twice; keeping the first", "alloc", a.ID)
			continue
		}
		seen[a.ID] = true
		if r := e.runners[a.ID]; r != nil {
			r.inSet = true
			r.want(a)
			continue
		}
		if r := e.newRunnerLocked(a); r != nil {
			e.runners[a.ID] = r
		}
	}
	for id, r := range e.runners {
		if seen[id] {
			continue
		}
		r.inSet = false
		switch {
		case !r.terminal:
			r.requestStopLocked()
		case r.dir == "" || r.logsGone:
			// Nothing left to serve and the leader no longer asks.
			delete(e.runners, id)
		}
	}
}

// newRunnerLocked creates the runner of an allocation seen for the first
// time. Allocations that cannot run become terminal at once and report so,
// which lets the leader converge instead of waiting forever.
func (e *Executor) newRunnerLocked(a Alloc) *execRunner {
	r := &execRunner{e: e, id: a.ID, spec: a, gen: a.RestartGen, wantGen: a.RestartGen, inSet: true,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	switch {
	case !execValidID(a.ID):
		e.log.Warn("executor: refusing an allocation id that is not a file name", "alloc", a.ID)
		e.finishEarlyLocked(r, metadata.AllocFailed, fmt.Sprintf("invalid allocation id %q", a.ID))
	case a.Desired == metadata.DesiredStop:
		e.finishEarlyLocked(r, metadata.AllocStopped, "stopped before it started")
	case a.Desired != metadata.DesiredRun:
		e.log.Warn("executor: ignoring an allocation with an unknown desired state", "alloc", a.ID, "desired", a.Desired)
		return nil
	default:
		if err := r.isolate(); err != nil {
			e.log.Warn("executor: refusing an allocation", "alloc", a.ID, "err", err)
			e.finishEarlyLocked(r, metadata.AllocFailed, err.Error())
			break
		}
		r.dir = filepath.Join(e.cfg.Dir, a.ID)
		var after <-chan struct{}
		if old := e.dying[a.ID]; old != nil {
			after = old.done
		}
		e.wg.Add(1)
		go r.run(after)
	}
	return r
}

// finishEarlyLocked makes r terminal without running anything and reports
// it from a goroutine of ours: Report may feed the very loop calling Apply.
func (e *Executor) finishEarlyLocked(r *execRunner, state metadata.AllocState, msg string) {
	r.terminal = true
	close(r.done)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		r.report(state, -1, msg)
	}()
}

// execValidID reports whether id can name a directory under Dir.
func execValidID(id string) bool {
	return id != "" && id != "." && id != ".." && len(id) <= 255 && !strings.ContainsAny(id, "/\\\x00")
}

// KillAll kills every task as fast as possible and forgets the
// allocations, without reporting: the worker is fenced and the controller
// marks them lost itself.
func (e *Executor) KillAll(reason string) {
	e.mu.Lock()
	var rs []*execRunner
	for id, r := range e.runners {
		r.killed = true
		r.wakeUp()
		rs = append(rs, r)
		if !r.terminal {
			e.dying[id] = r
		}
		if r.dir != "" && r.retention == nil && e.cfg.LogRetention > 0 {
			// Forgotten, but its logs must not stay on disk forever.
			r.retention = time.AfterFunc(e.cfg.LogRetention, r.expire)
		}
	}
	e.runners = make(map[string]*execRunner)
	e.mu.Unlock()
	e.log.Warn("executor: killing every task", "reason", reason, "allocations", len(rs))
	deadline := time.NewTimer(execKillAllWait)
	defer deadline.Stop()
	for _, r := range rs {
		select {
		case <-r.done:
		case <-deadline.C:
			e.log.Error("executor: supervisors still alive after KillAll", "wait", execKillAllWait)
			return
		}
	}
}

// Running is the number of allocations whose task is running.
func (e *Executor) Running() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.runners {
		if r.running {
			n++
		}
	}
	return n
}

// Close stops every task gracefully, as Apply with an empty set would, and
// waits for them. Later Apply calls do nothing.
func (e *Executor) Close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		for _, r := range e.runners {
			if !r.terminal {
				r.requestStopLocked()
			}
			if r.retention != nil {
				r.retention.Stop()
			}
		}
	}
	e.mu.Unlock()
	e.wg.Wait()
}
