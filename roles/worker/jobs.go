package worker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/corral-dev/corral/roles/worker/executor"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// allocRunner runs a worker's allocations: the executor (real processes
// under `corral supervise`) or, for benchmarks, a simulation.
type allocRunner interface {
	Apply(allocs []executor.Alloc)
	KillAll(reason string)
	Running() int
	ReadLog(id, stream string, offset int64, tail int, max int) ([]byte, int64, error)
	Close()
}

// workerJobs is the worker's side of running allocations; the worker's
// run loop owns everything but the report queue.
type workerJobs struct {
	runner    allocRunner
	assignVer uint64          // version of the last assignment applied at this epoch
	knownRun  map[string]bool // allocations handed to the runner at this epoch
	inflight  *transport.AllocReport
	sentAt    time.Time
	logc      chan *transport.LogData

	mu      sync.Mutex // guards pending: the runner reports from its goroutines
	pending map[string]transport.AllocStatus
	kickc   chan struct{}
}

func (j *workerJobs) init() {
	j.knownRun = map[string]bool{}
	j.pending = map[string]transport.AllocStatus{}
	j.kickc = make(chan struct{}, 1)
	j.logc = make(chan *transport.LogData, 16)
}

// report queues a state change; the latest state of an allocation wins.
func (j *workerJobs) report(r executor.Report) {
	st := transport.AllocStatus{ID: r.ID, State: string(r.State), Restarts: uint64(max(r.Restarts, 0)), Message: r.Message,
		AtMS: uint64(max(r.At.UnixMilli(), 0))}
	if r.State == metadata.AllocExited || r.State == metadata.AllocFailed || r.State == metadata.AllocStopped {
		st.HasExit, st.ExitCode = true, int64(r.ExitCode)
	}
	j.mu.Lock()
	j.pending[r.ID] = st
	j.mu.Unlock()
	select {
	case j.kickc <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// reset forgets everything of the epoch that ended.
func (j *workerJobs) reset() {
	j.assignVer = 0
	clear(j.knownRun)
	j.inflight = nil
	j.mu.Lock()
	clear(j.pending)
	j.mu.Unlock()
}

// ensureRunner creates the executor on first use, once the session timeout
// is known: a supervisor must kill its task well before the leader can
// fence this worker and place the work elsewhere (the leader fences at the
// earliest timeout - heartbeat interval after a hang starts; the task is
// dead by RefreshTimeout + LostGrace = timeout/2).
func (w *Worker) ensureRunner() allocRunner {
	if w.jobs.runner != nil {
		return w.jobs.runner
	}
	if w.cfg.Simulate {
		w.jobs.runner = newSimRunner(w.jobs.report)
		return w.jobs.runner
	}
	sup := w.cfg.SupervisorCmd
	if len(sup) == 0 {
		exe, err := os.Executable()
		if err != nil {
			w.log.Error("cannot find the corral binary to supervise tasks", "err", err)
			exe = "corral"
		}
		sup = []string{exe, "supervise"}
	}
	refresh := time.Duration(0.4 * float64(w.timeout))
	ex, err := executor.New(executor.Config{
		Dir: filepath.Join(w.cfg.DataDir, "allocs"), SupervisorCmd: sup,
		RefreshEvery: min(w.cfg.HeartbeatInterval, refresh/4), RefreshTimeout: refresh, LostGrace: w.timeout / 10,
		LogRetention: w.cfg.LogRetention, Report: w.jobs.report, Logger: w.log, MayRefresh: w.mayRefresh(time.Duration(0.45 * float64(w.timeout))),
		CgroupRoot: w.cgroups.AllocsRoot,
		TaskUser:   w.cfg.TaskUser, AllowedTaskUsers: w.cfg.AllowedTaskUsers, AllowedCommands: w.cfg.AllowedCommands,
	})
	if err != nil {
		w.log.Error("cannot run allocations", "err", err)
		w.jobs.runner = newSimRunner(func(r executor.Report) {
			r.State, r.Message = metadata.AllocFailed, "worker cannot run tasks: "+err.Error()
			w.jobs.report(r)
		})
		return w.jobs.runner
	}
	w.jobs.runner = ex
	return ex
}

// mayRefresh allows supervisor refreshes only while the last acknowledged
// heartbeat was sent less than 0.45 x the session timeout ago. The
// acknowledgement is processed by the session loop, so if that loop hangs
// (a deadlock, not only SIGSTOP of the whole process) refreshes stop too:
// the supervisor then kills its task by 0.45 + 0.4 (refresh timeout) +
// 0.1 (lost grace) = 0.95 x the timeout after that heartbeat was sent,
// before the leader can fence the worker (>= 1 x the timeout after it
// received it).
func (w *Worker) mayRefresh(limit time.Duration) func() bool {
	return func() bool {
		at := w.ackedAt.Load()
		return at != 0 && time.Since(time.Unix(0, at)) < limit
	}
}

// onAssign converges the runner to the leader's assignment, if it is for
// this worker's current epoch: an order for an epoch that is not the
// worker's own is refused, so a stale leader can never start anything.
func (w *Worker) onAssign(m *transport.Assign) {
	if !w.alive || m.Epoch != w.epoch {
		w.met.staleCtrl.Inc()
		w.log.Warn("refusing an assignment for another epoch", "assignment_epoch", m.Epoch, "epoch", w.epoch, "alive", w.alive)
		return
	}
	if m.Version <= w.jobs.assignVer {
		return
	}
	specs := make(map[string]*metadata.JobSpec, len(m.Specs))
	for name, raw := range m.Specs {
		var s metadata.JobSpec
		if err := json.Unmarshal([]byte(raw), &s); err == nil {
			specs[name] = &s
		}
	}
	list := make([]executor.Alloc, 0, len(m.Allocs))
	now := time.Now()
	for _, a := range m.Allocs {
		spec := specs[a.Job]
		switch {
		case a.Desired == metadata.DesiredStop && !w.jobs.knownRun[a.ID]:
			w.jobs.report(executor.Report{ID: a.ID, State: metadata.AllocStopped, ExitCode: -1, Message: "stopped before it started", At: now})
			continue
		case spec == nil:
			w.jobs.report(executor.Report{ID: a.ID, State: metadata.AllocFailed, ExitCode: -1, Message: "assignment without a readable job spec", At: now})
			continue
		}
		if a.Desired == metadata.DesiredRun {
			w.jobs.knownRun[a.ID] = true
		}
		list = append(list, executor.Alloc{ID: a.ID, Job: a.Job, Type: spec.Type, Desired: a.Desired, RestartGen: a.RestartGen,
			Task: spec.Task, Restart: spec.Restart})
	}
	if len(list) > 0 || w.jobs.runner != nil {
		w.ensureRunner().Apply(list)
	}
	w.jobs.assignVer = m.Version
}

// flushReports sends the queued state changes when none are in flight.
func (w *Worker) flushReports(now time.Time) {
	if !w.alive || w.conn == nil {
		return
	}
	if w.jobs.inflight != nil {
		if now.Sub(w.jobs.sentAt) < 2*w.cfg.HeartbeatInterval+time.Second {
			return
		}
		w.write(w.conn, w.jobs.inflight) // not acknowledged: say it again
		w.jobs.sentAt = now
		return
	}
	w.jobs.mu.Lock()
	if len(w.jobs.pending) == 0 {
		w.jobs.mu.Unlock()
		return
	}
	w.seq++
	r := &transport.AllocReport{Seq: w.seq, WorkerID: w.id, Epoch: w.epoch}
	for id, st := range w.jobs.pending {
		if len(r.Statuses) == 4096 {
			break
		}
		r.Statuses = append(r.Statuses, st)
		delete(w.jobs.pending, id)
	}
	w.jobs.mu.Unlock()
	w.jobs.inflight, w.jobs.sentAt = r, now
	w.write(w.conn, r)
}

func (w *Worker) onReportAck(m *transport.ReportAck) {
	if w.jobs.inflight != nil && w.jobs.inflight.Seq == m.Seq {
		w.jobs.inflight = nil
		w.flushReports(time.Now())
	}
}

// onLogRequest reads the log off the loop and answers through logc.
func (w *Worker) onLogRequest(m *transport.LogRequest) {
	runner := w.jobs.runner
	go func() {
		d := &transport.LogData{ReqID: m.ReqID, Next: -1}
		if runner == nil {
			d.Err = fmt.Sprintf("allocation %s is not on this worker", m.AllocID)
		} else {
			limit := int(min(max(m.Max, 1), transport.MaxLogChunk))
			data, next, err := runner.ReadLog(m.AllocID, m.Stream, m.Offset, int(min(m.Tail, 1<<20)), limit)
			d.Data, d.Next = data, next
			if err != nil {
				d.Err = err.Error()
			}
		}
		select {
		case w.jobs.logc <- d:
		case <-w.life.Done():
		}
	}()
}

// runningTasks is reported in heartbeats.
func (w *Worker) runningTasks() uint64 {
	if w.jobs.runner == nil {
		return 0
	}
	return uint64(w.jobs.runner.Running())
}

// simRunner acknowledges allocations without running anything, for
// benchmarks of the control plane.
type simRunner struct {
	mu      sync.Mutex
	report  func(executor.Report)
	running map[string]bool
}

func newSimRunner(report func(executor.Report)) *simRunner {
	return &simRunner{report: report, running: map[string]bool{}}
}

func (s *simRunner) Apply(allocs []executor.Alloc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	want := map[string]bool{}
	for _, a := range allocs {
		if a.Desired != metadata.DesiredRun {
			continue
		}
		want[a.ID] = true
		if !s.running[a.ID] {
			s.running[a.ID] = true
			s.report(executor.Report{ID: a.ID, State: metadata.AllocRunning, At: now, Message: "simulated"})
		}
	}
	for id := range s.running {
		if !want[id] {
			delete(s.running, id)
			s.report(executor.Report{ID: id, State: metadata.AllocStopped, At: now, Message: "simulated stop"})
		}
	}
}

func (s *simRunner) KillAll(string) {
	s.mu.Lock()
	clear(s.running)
	s.mu.Unlock()
}

func (s *simRunner) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

func (s *simRunner) ReadLog(id, _ string, _ int64, _ int, _ int) ([]byte, int64, error) {
	return nil, 0, fmt.Errorf("allocation %s is simulated: it has no logs", id)
}

func (s *simRunner) Close() { s.KillAll("") }
