package executor

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// execRunner owns one allocation: its goroutine (run) starts the
// supervisor, restarts it and reports. Apply and KillAll only change the
// wanted fields under executor.mu and wake it.
type execRunner struct {
	e    *Executor
	id   string
	spec Alloc  // as first applied: a new task is a new allocation
	dir  string // "" when nothing ever ran (no logs)
	wake chan struct{}
	done chan struct{} // closed once no process of this allocation is left
	// Set by isolate before the run goroutine starts.
	user    string              // the user the task runs as
	cred    *syscall.Credential // nil: the worker's own user
	command string              // the command to run (resolved when commands are restricted)

	// Guarded by executor.mu.
	wantGen   uint64
	stopReq   bool // sticky: a stopped allocation is never started again
	killed    bool
	running   bool
	stopFail  bool // a stop of the current task failed: logged once
	terminal  bool
	inSet     bool // in the last desired set
	logsGone  bool
	retention *time.Timer

	// Owned by the run goroutine.
	gen        uint64 // restart generation already honoured
	restarts   int
	policyUsed int // restarts done by the restart policy
}

// execRequest is what the executor currently asks of a runner, strongest
// first.
type execRequest int

const (
	execReqNone execRequest = iota
	execReqRestart
	execReqStop
	execReqKill
)

// execOutcome is how one supervised run ended.
type execOutcome struct {
	cause   execRequest // what the executor asked for while it ran
	started bool
	pid     int
	code    int
	failure string // the task could not start
	lost    string // the supervisor killed the task on its own
	// stopFailed: the supervisor could not signal the task, which was
	// still running then; exited says whether its exit came after all.
	stopFailed string
	exited     bool
}

// isolate decides, before anything runs, the user the task runs as and
// whether its command is allowed (isolation.go).
func (r *execRunner) isolate() error {
	t := r.spec.Task
	name, err := r.e.users.choose(t.User)
	if err != nil {
		return err
	}
	cred, err := r.e.users.credential(name)
	if err != nil {
		return err
	}
	r.user, r.cred, r.command = name, cred, t.Command
	if strings.TrimSpace(t.Command) == "" {
		return nil // spawn reports it
	}
	pathEnv := os.Getenv("PATH")
	if p, ok := t.Env["PATH"]; ok {
		pathEnv = p
	}
	workdir := filepath.Join(r.e.cfg.Dir, r.id, TaskDirName)
	if t.Workdir != "" {
		if filepath.IsAbs(t.Workdir) {
			workdir = t.Workdir
		} else {
			workdir = filepath.Join(workdir, t.Workdir)
		}
	}
	r.command, err = checkCommand(r.e.cfg.AllowedCommands, t.Command, pathEnv, workdir)
	return err
}

// want records a newer desired state; the runner acts on it when woken.
// Called with executor.mu held.
func (r *execRunner) want(a Alloc) {
	if r.terminal {
		return
	}
	if a.Desired == metadata.DesiredStop {
		r.requestStopLocked()
		return
	}
	if a.RestartGen > r.wantGen {
		r.wantGen = a.RestartGen
		r.wakeUp()
	}
}

func (r *execRunner) requestStopLocked() {
	r.stopReq = true
	r.wakeUp()
}

func (r *execRunner) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default: // already pending; the runner reads the latest state anyway
	}
}

func (r *execRunner) pending() execRequest {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	switch {
	case r.killed:
		return execReqKill
	case r.stopReq:
		return execReqStop
	case r.wantGen > r.gen:
		return execReqRestart
	}
	return execReqNone
}

func (r *execRunner) run(after <-chan struct{}) {
	defer r.e.wg.Done()
	defer r.forget()
	defer close(r.done)
	r.report(metadata.AllocStarting, 0, "starting")
	if after != nil {
		<-after // the same id's previous processes, killed by KillAll
	}
	for {
		if !r.next(r.runOnce()) {
			return
		}
	}
}

// forget drops the runner from the dying set once its processes are gone.
func (r *execRunner) forget() {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	if r.e.dying[r.id] == r {
		delete(r.e.dying, r.id)
	}
}

func (r *execRunner) runOnce() execOutcome {
	switch req := r.pending(); req {
	case execReqKill, execReqStop:
		return execOutcome{cause: req, code: -1}
	case execReqRestart:
		r.absorbGen() // about to start afresh anyway
	}
	sup, err := r.spawn()
	if err != nil {
		return execOutcome{code: -1, failure: err.Error()}
	}
	return r.supervise(sup)
}

// supervise refreshes the supervisor and relays stop requests until it
// exits.
func (r *execRunner) supervise(s *execSup) execOutcome {
	out := execOutcome{code: -1}
	exited := false
	tick := time.NewTicker(r.e.cfg.RefreshEvery)
	defer tick.Stop()
	var force <-chan time.Time // a last resort if the supervisor does not obey
	for events := s.events; events != nil; {
		select {
		case line, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			exited = r.event(line, &out) || exited
			if out.stopFailed != "" && !r.closing() {
				// The supervisor still owns the task and will report its
				// exit; killing the supervisor would only orphan the task.
				force = nil
			}
		case <-tick.C:
			if r.e.cfg.MayRefresh == nil || r.e.cfg.MayRefresh() {
				s.send(SupRefresh)
			}
		case <-r.wake:
			if d, ok := r.relay(s, &out); ok {
				force = time.After(d)
			} else if force == nil && out.stopFailed != "" && r.closing() {
				// Close must not wait forever for a task nothing can
				// stop: give the supervisor up (next reports it failed).
				force = time.After(r.e.cfg.LostGrace + time.Second)
			}
		case <-force:
			r.e.log.Warn("executor: supervisor did not stop the task in time; killing it", "alloc", r.id)
			s.kill(out.pid)
			force = nil
		}
	}
	err := s.cmd.Wait()
	r.setRunning(false)
	out.exited = exited
	if !exited && out.failure == "" {
		out.failure = fmt.Sprintf("supervisor ended without an exit code: %v%s", err, s.stderr.suffix())
	}
	return out
}

// relay passes the executor's newest request on to the supervisor. It
// returns how long the supervisor may take to obey when it asked for an
// end.
func (r *execRunner) relay(s *execSup, out *execOutcome) (time.Duration, bool) {
	req := r.pending()
	if req <= out.cause {
		return 0, false
	}
	prev := out.cause
	out.cause = req
	switch {
	case req == execReqKill:
		s.closeStdin() // the supervisor kills the group after LostGrace
		return r.e.cfg.LostGrace + time.Second, true
	case prev == execReqNone:
		s.send(SupStop) // a restart stops gracefully too
		return r.killTimeout() + 2*time.Second, true
	}
	return 0, false // a stop already on its way serves a restart or a stop
}

// event handles one supervisor line and reports whether it was the final
// "exited".
func (r *execRunner) event(line string, out *execOutcome) bool {
	verb, arg, _ := strings.Cut(line, " ")
	switch verb {
	case SupEvStarted:
		out.started = true
		out.pid, _ = strconv.Atoi(arg)
		r.setRunning(true)
		r.report(metadata.AllocRunning, 0, "pid "+arg+" as "+r.user)
	case SupEvExited:
		code, err := strconv.Atoi(arg)
		if err != nil {
			code = -1
		}
		out.code = code
		return true
	case SupEvFailed:
		out.failure = arg
	case SupEvLost:
		out.lost = arg
	case SupEvStopFailed:
		out.stopFailed = arg
		r.stopFailed(arg)
	default:
		r.e.log.Debug("executor: unknown supervisor line", "alloc", r.id, "line", line)
	}
	return false
}

// stopFailed tells, once per task, that it could not be stopped: the
// allocation stays running (it is) with the reason and what to do.
func (r *execRunner) stopFailed(reason string) {
	r.e.mu.Lock()
	first := !r.stopFail
	r.stopFail = true
	r.e.mu.Unlock()
	if !first {
		return
	}
	r.e.log.Error("executor: cannot stop a task; it keeps running", "alloc", r.id, "job", r.spec.Job, "user", r.user, "err", reason)
	r.report(metadata.AllocRunning, 0, r.stopFailedMessage(reason))
}

func (r *execRunner) stopFailedMessage(reason string) string {
	return fmt.Sprintf("could not stop the task running as %s, it is still running: %s", r.user, reason)
}

// closing reports whether the executor is closing or killed this
// allocation: then nothing waits for a task that cannot be stopped.
func (r *execRunner) closing() bool {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	return r.e.closed || r.killed
}

// next acts on how a run ended and reports whether to run again.
func (r *execRunner) next(out execOutcome) bool {
	r.e.mu.Lock()
	r.stopFail = false // a new task, if any, has its own stops
	r.e.mu.Unlock()
	switch {
	case out.cause == execReqKill:
		return false
	case out.stopFailed != "" && !out.exited:
		// The supervisor was given up on while the task still ran: it
		// may run on, so the allocation must not read "stopped".
		r.finish(metadata.AllocFailed, -1, r.stopFailedMessage(out.stopFailed))
		return false
	}
	switch out.cause {
	case execReqStop:
		r.finish(metadata.AllocStopped, out.code, "stopped by request")
		return false
	case execReqRestart:
		r.restartByRequest()
		return true
	}
	if out.lost != "" {
		r.finish(metadata.AllocLost, out.code, "supervision lost: "+out.lost)
		return false
	}
	return r.policy(out)
}

func (r *execRunner) restartByRequest() {
	r.absorbGen()
	r.restarts++
	r.report(metadata.AllocStarting, 0, "restarting by request")
}

func (r *execRunner) absorbGen() {
	r.e.mu.Lock()
	r.gen = r.wantGen
	r.e.mu.Unlock()
}

// policy applies the restart policy to a run that ended on its own.
func (r *execRunner) policy(out execOutcome) bool {
	code, what := out.code, fmt.Sprintf("exited with code %d", out.code)
	if out.failure != "" {
		code, what = -1, "could not start: "+out.failure
	}
	if r.spec.Type == metadata.JobBatch && out.failure == "" && code == 0 {
		r.finish(metadata.AllocExited, 0, what)
		return false
	}
	pol := r.spec.Restart
	if r.policyUsed >= pol.Attempts {
		r.finish(metadata.AllocFailed, code, fmt.Sprintf("%s; %d restarts spent", what, r.policyUsed))
		return false
	}
	d := execBackoff(pol, r.policyUsed)
	r.report(metadata.AllocStarting, 0, fmt.Sprintf("%s; restarting in %v (attempt %d of %d)", what, d, r.policyUsed+1, pol.Attempts))
	return r.delay(d, code)
}

// delay waits before a policy restart; a request cuts it short.
func (r *execRunner) delay(d time.Duration, code int) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.policyUsed++
			r.restarts++
			return true
		case <-r.wake:
			switch r.pending() {
			case execReqKill:
				return false
			case execReqStop:
				r.finish(metadata.AllocStopped, code, "stopped by request")
				return false
			case execReqRestart:
				r.restartByRequest() // the user's restart spends no attempt
				return true
			}
		}
	}
}

// execBackoff is Delay × Backoff^n, capped by MaxDelay (when set) and by
// the longest delay a spec may ask for.
func execBackoff(p metadata.RestartPolicy, n int) time.Duration {
	limit := metadata.MaxRestartDelay
	if p.MaxDelay > 0 {
		limit = min(limit, time.Duration(p.MaxDelay))
	}
	d := float64(max(p.Delay, 0)) * math.Pow(max(p.Backoff, 1), float64(n))
	if d >= float64(limit) || math.IsNaN(d) {
		return limit
	}
	return time.Duration(d)
}

func (r *execRunner) killTimeout() time.Duration {
	if kt := time.Duration(r.spec.Task.KillTimeout); kt > 0 {
		return kt
	}
	return execDefaultKillTimeout
}

// finish reports a terminal state and schedules the removal of the logs.
func (r *execRunner) finish(state metadata.AllocState, code int, msg string) {
	e := r.e
	e.mu.Lock()
	r.terminal = true
	if r.dir != "" && e.cfg.LogRetention > 0 && !e.closed && !r.killed {
		r.retention = time.AfterFunc(e.cfg.LogRetention, r.expire)
	}
	e.mu.Unlock()
	r.report(state, code, msg)
}

// expire removes the logs of a terminal allocation, and the allocation
// itself once the leader no longer lists it.
func (r *execRunner) expire() {
	e := r.e
	e.mu.Lock()
	if cur := e.runners[r.id]; cur != nil && cur != r {
		e.mu.Unlock()
		return // the id was reused after KillAll: the dir is not ours now
	}
	r.logsGone = true
	if !r.inSet {
		delete(e.runners, r.id)
	}
	e.mu.Unlock()
	if err := os.RemoveAll(r.dir); err != nil {
		e.log.Warn("executor: cannot remove allocation logs", "alloc", r.id, "err", err)
	}
}

func (r *execRunner) setRunning(v bool) {
	r.e.mu.Lock()
	r.running = v
	r.e.mu.Unlock()
}

// report sends a state change, unless KillAll took the allocation over.
func (r *execRunner) report(state metadata.AllocState, code int, msg string) {
	r.e.mu.Lock()
	killed := r.killed
	r.e.mu.Unlock()
	if killed {
		return
	}
	r.e.log.Info("executor: allocation "+string(state), "alloc", r.id, "job", r.spec.Job, "code", code,
		"restarts", r.restarts, "msg", msg)
	r.e.cfg.Report(Report{ID: r.id, State: state, ExitCode: code, Restarts: r.restarts, Message: msg, At: time.Now()})
}

// kill is the last resort when a supervisor ignores its stdin: SIGKILL
// the task's process group and the supervisor.
func (s *execSup) kill(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	_ = s.cmd.Process.Kill()
}
