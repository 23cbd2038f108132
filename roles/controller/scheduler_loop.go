package controller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/scheduler"
)

// schedLoop runs evaluations on the active controller. Which jobs need one
// is replicated (Job.EvalSeq > EvaluatedSeq), so a new leader finds every
// pending evaluation in its state and nothing is lost with the old one.
// One pass reads the pending jobs, reconciles and places each, and commits
// all their decisions as one plan entry; the next pass starts only after
// that entry applied, so the scheduler always works from its own last
// decisions.
type schedLoop struct {
	c    *Controller
	log  *slog.Logger
	kick chan struct{}
	met  *schedMetrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex
	gen uint64
}

type schedMetrics struct {
	evaluations prometheus.Counter
	placements  prometheus.Counter
	refused     prometheus.Counter
	duration    prometheus.Histogram
}

func (c *Controller) startScheduler() {
	s := &schedLoop{c: c, log: c.log.With("component", "scheduler"), kick: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.met = &schedMetrics{
		evaluations: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_scheduler_evaluations_total",
			Help: "Job evaluations committed by this controller as leader."}),
		placements: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_scheduler_placements_total",
			Help: "Allocations placed by committed plans of this controller."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_scheduler_plans_refused_total",
			Help: "Job plans refused at apply because the job or a worker changed meanwhile (recomputed)."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "corral_scheduler_evaluation_duration_seconds",
			Help:    "Time of one scheduler pass, from reading the state to the plan applied.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 3, 12)}),
	}
	c.reg.MustRegister(s.met.evaluations, s.met.placements, s.met.refused, s.met.duration,
		&allocStateCollector{c: c}, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_scheduler_pending_evaluations",
			Help: "Jobs waiting for an evaluation in the replicated state."},
			func() float64 { return float64(len(c.State().PendingJobs())) }))
	c.sched = s
}

func (s *schedLoop) close() {
	s.cancel()
	s.wg.Wait()
}

// kick wakes the loop waiting on ch without blocking: a kick already
// pending covers this one.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// jobsChanged wakes the scheduler and the assignment pusher after an entry
// that touched jobs, allocations or workers applied.
func (c *Controller) jobsChanged() {
	if c.sched != nil {
		kick(c.sched.kick)
	}
	if c.workers != nil {
		c.workers.AssignmentsChanged()
	}
}

func (s *schedLoop) leadershipChanged(isLeader bool, term uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if isLeader {
		gen := s.gen
		s.wg.Go(func() { s.run(gen, term) })
	}
}

func (s *schedLoop) current(gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen == gen && s.ctx.Err() == nil
}

// run schedules while this leadership lasts. It first waits until the
// leader has applied everything committed before its term, so that it
// never decides from a state older than its predecessor's last plan.
func (s *schedLoop) run(gen, term uint64) {
	for s.current(gen) {
		ctx, cancel := context.WithTimeout(s.ctx, s.c.cfg.RequestTimeout)
		err := s.c.r.LinearizableRead(ctx)
		cancel()
		if err == nil {
			break
		}
	}
	s.log.Info("scheduler running", "controller_epoch", term, "pending_jobs", len(s.c.State().PendingJobs()))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for s.current(gen) {
		progressed := s.pass(term)
		if progressed {
			continue // more may be pending: do not wait for a kick
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-tick.C: // a refused or failed proposal is retried
		}
	}
}

// pass evaluates every pending job once. It reports whether it committed
// something.
func (s *schedLoop) pass(term uint64) bool {
	start := time.Now()
	st := s.c.State()
	names := st.PendingJobs()
	if len(names) == 0 {
		return false
	}
	view := st.SchedulerView(names)
	plan := scheduler.Plan(view, scheduler.Inputs{Loads: s.c.workerLoads(), Now: time.Now(), Term: term, NewID: newAllocID})
	if len(plan.Jobs) == 0 {
		return false
	}
	res, err := s.c.r.ProposePayload(s.ctx, metadata.OpPlan, plan)
	if err != nil {
		if s.ctx.Err() == nil && !errors.Is(err, ErrStopped) {
			s.log.Warn("could not commit a plan; will retry", "jobs", len(plan.Jobs), "err", err)
		}
		return false
	}
	placed := 0
	refused := map[string]string{}
	if out, ok := res.Out.(metadata.PlanResult); ok {
		refused = out.Refused
	}
	for _, jp := range plan.Jobs {
		if why, bad := refused[jp.Job]; bad {
			s.met.refused.Inc()
			s.log.Info("plan refused; evaluating again", "job", jp.Job, "reason", why)
			continue
		}
		placed += len(jp.Place)
		s.met.evaluations.Inc()
	}
	s.met.placements.Add(float64(placed))
	s.met.duration.Observe(time.Since(start).Seconds())
	if placed > 0 {
		s.log.Debug("plan committed", "jobs", len(plan.Jobs), "placed", placed, "took", time.Since(start))
	}
	return true
}

func newAllocID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// workerLoads returns each live worker's reported CPU use as a share of
// its capacity (0..1), from the leader's in-memory sessions.
func (c *Controller) workerLoads() map[string]float64 {
	out := map[string]float64{}
	if c.workers == nil {
		return out
	}
	views, ok := c.workers.Views(time.Now())
	if !ok {
		return out
	}
	st := c.State()
	for id, v := range views {
		if v.Load == nil {
			continue
		}
		if w, ok := st.Worker(id); ok && w.Capacity.CPUMillis > 0 {
			out[id] = min(1, float64(v.Load.CPUMillis)/float64(w.Capacity.CPUMillis))
		}
	}
	return out
}

// allocStateCollector reports corral_scheduler_allocations{state}.
type allocStateCollector struct{ c *Controller }

var allocsDesc = prometheus.NewDesc("corral_scheduler_allocations",
	"Allocations per state in the replicated state.", []string{"state"}, nil)

var allocStates = []metadata.AllocState{metadata.AllocPending, metadata.AllocStarting, metadata.AllocRunning,
	metadata.AllocExited, metadata.AllocFailed, metadata.AllocLost, metadata.AllocStopped}

func (a *allocStateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- allocsDesc }

func (a *allocStateCollector) Collect(ch chan<- prometheus.Metric) {
	counts := a.c.State().AllocCounts()
	for _, s := range allocStates {
		ch <- prometheus.MustNewConstMetric(allocsDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}
