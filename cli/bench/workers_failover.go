package bench

// `corral bench workers --kill-leader-every`: kill the leader controller on a schedule while the simulated workers
// are measured, restart it alike, and report what each failover cost the workers (docs/ARCHITECTURE.md, "What a
// failover costs a worker": nothing, when the ratios hold).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// simSession is what one simulated worker's session went through: fed by its callbacks on the worker's loop, read
// once the measurement is over.
type simSession struct {
	mu         sync.Mutex
	firstEpoch uint64
	alive      []epochAt   // OnAlive: registrations, with the epoch each gave
	resumed    []time.Time // OnLeaderAck: the first heartbeat acknowledged by a new leader
	fences     []fenceAt   // OnFenced
	// The worker's fencing counters as last read from its registry, to tell the kinds of fencing apart.
	selfCount, ctrlCount float64
}

type epochAt struct {
	epoch uint64
	at    time.Time
}

type fenceAt struct {
	at           time.Time
	byController bool // a leader refused the worker's epoch; else the worker fenced itself
}

func (s *simSession) onAlive(epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstEpoch == 0 {
		s.firstEpoch = epoch
	}
	s.alive = append(s.alive, epochAt{epoch: epoch, at: time.Now()})
}

func (s *simSession) onLeaderAck(_ string, _ uint64, at time.Time) {
	s.mu.Lock()
	s.resumed = append(s.resumed, at)
	s.mu.Unlock()
}

// onFenced records a fencing and its kind, read from the worker's own counters (the worker increments one of them
// before it calls OnFenced). Fencings are rare, so gathering the worker's small registry here is cheap enough.
func (s *simSession) onFenced(reg prometheus.Gatherer) {
	at := time.Now()
	self, byCtrl := workerFencings(reg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fences = append(s.fences, fenceAt{at: at, byController: byCtrl > s.ctrlCount})
	s.selfCount, s.ctrlCount = self, byCtrl
}

// workerFencings reads corral_worker_self_fencings_total and corral_worker_fenced_by_controller_total.
func workerFencings(reg prometheus.Gatherer) (self, byController float64) {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "corral_worker_self_fencings_total":
				self += m.GetCounter().GetValue()
			case "corral_worker_fenced_by_controller_total":
				byController += m.GetCounter().GetValue()
			}
		}
	}
	return self, byController
}

// failoverWindow is what happened from one kill to the next (or to the end of the measurement).
type failoverWindow struct {
	kill         int // 0: from the start of the measurement to the first kill
	leader       uint64
	from, to     time.Time
	resumes      []time.Duration // per worker, from the kill to its first ack at a new leader; ascending
	notResumed   int             // workers with no ack at a new leader before the window ended
	selfFenced   int             // workers that fenced themselves
	ctrlFenced   int             // workers whose epoch a leader refused
	ctrlFencings float64         // the controllers' fencing counters
	newEpoch     int             // workers that registered again with another epoch than their first
}

func (w failoverWindow) harmed() bool {
	return w.selfFenced > 0 || w.ctrlFenced > 0 || w.ctrlFencings > 0 || w.newEpoch > 0
}

// failoverWindows splits the measurement [t0, end] at the kills and says what each window cost the workers. ctrl
// holds the controllers' counters at t0, just before each kill and at end (len(kills)+2 samples). The first window
// (kill 0) runs from t0 to the first kill; the last element is the total over the whole measurement (kill -1), whose
// resumes are every kill's.
func failoverWindows(kills []killRecord, sessions []*simSession, t0, end time.Time, ctrl []ctrlFencings) []failoverWindow {
	ws := []failoverWindow{{from: t0}}
	for _, k := range kills {
		ws[len(ws)-1].to = k.at
		ws = append(ws, failoverWindow{kill: k.n, leader: k.leaderID, from: k.at})
	}
	ws[len(ws)-1].to = end
	total := failoverWindow{kill: -1, from: t0, to: end}
	for i := range ws {
		if i+1 < len(ctrl) {
			ws[i].ctrlFencings = ctrl[i+1].since(ctrl[i])
		}
	}
	var allResumes [][]time.Duration
	for i := range ws {
		w := &ws[i]
		for _, s := range sessions {
			if w.kill > 0 {
				if at, ok := s.resumedIn(w.from, w.to); ok {
					w.resumes = append(w.resumes, at.Sub(w.from))
				} else {
					w.notResumed++
				}
			}
			w.add(s.harmIn(w.from, w.to))
		}
		slices.Sort(w.resumes)
		allResumes = append(allResumes, w.resumes)
		total.notResumed += w.notResumed
		total.ctrlFencings += w.ctrlFencings
	}
	total.resumes = mergeLatencies(allResumes)
	// Workers, not events: one that fenced itself at two kills counts once in the total.
	for _, s := range sessions {
		total.add(s.harmIn(t0, end))
	}
	return append(ws, total)
}

// sessionHarm is what a worker's session suffered in a window.
type sessionHarm struct{ selfFenced, ctrlFenced, newEpoch bool }

func (w *failoverWindow) add(h sessionHarm) {
	w.selfFenced += b2i(h.selfFenced)
	w.ctrlFenced += b2i(h.ctrlFenced)
	w.newEpoch += b2i(h.newEpoch)
}

// resumedIn returns the worker's first acknowledgement by a new leader in [from, to).
func (s *simSession) resumedIn(from, to time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.resumed {
		if in(t, from, to) {
			return t, true
		}
	}
	return time.Time{}, false
}

// harmIn says whether the worker was fenced, either way, or registered with another epoch than its first in
// [from, to).
func (s *simSession) harmIn(from, to time.Time) sessionHarm {
	s.mu.Lock()
	defer s.mu.Unlock()
	var h sessionHarm
	for _, f := range s.fences {
		if in(f.at, from, to) {
			h.selfFenced = h.selfFenced || !f.byController
			h.ctrlFenced = h.ctrlFenced || f.byController
		}
	}
	for _, a := range s.alive {
		if a.epoch != s.firstEpoch && in(a.at, from, to) {
			h.newEpoch = true
		}
	}
	return h
}

func in(t, from, to time.Time) bool { return !t.Before(from) && t.Before(to) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// formatResume prints a resume time to the millisecond, "-" without samples.
func formatResume(sorted []time.Duration, p float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	return percentile(sorted, p).Round(time.Millisecond).String()
}

// printFailover prints the per-kill table and returns an error when a failover fenced a worker or gave one a new
// epoch, or when the kills could not all be done.
func printFailover(w io.Writer, every time.Duration, windows []failoverWindow, killErr error, restarted []int) error {
	fmt.Fprintf(w, "failover: %d kill(s) of the leader; resume = from the SIGKILL to a worker's first heartbeat "+
		"acknowledged by the new leader; not resumed = none before the next kill (or the end)\n", len(windows)-2)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "KILL\tLEADER\tRESUMED\tNOT-RESUMED\tRESUME-P50\tRESUME-P99\tRESUME-MAX\tSELF-FENCED\tFENCED-BY-CTRL\tCTRL-FENCINGS\tNEW-EPOCH\t")
	row := func(name, leader string, x failoverWindow) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%d\t%d\t%.0f\t%d\t\n", name, leader, len(x.resumes), x.notResumed,
			formatResume(x.resumes, 50), formatResume(x.resumes, 99), formatResume(x.resumes, 100), x.selfFenced,
			x.ctrlFenced, x.ctrlFencings, x.newEpoch)
	}
	total := windows[len(windows)-1]
	for _, x := range windows[:len(windows)-1] {
		if x.kill == 0 {
			if x.harmed() {
				fmt.Fprintf(tw, "before\t-\t-\t-\t-\t-\t-\t%d\t%d\t%.0f\t%d\t\n", x.selfFenced, x.ctrlFenced,
					x.ctrlFencings, x.newEpoch)
			}
			continue
		}
		row(fmt.Sprint(x.kill), fmt.Sprint(x.leader), x)
	}
	row("all", "-", total)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  SELF-FENCED: workers that fenced themselves (corral_worker_self_fencings_total); FENCED-BY-CTRL: "+
		"workers whose epoch a leader refused (corral_worker_fenced_by_controller_total); CTRL-FENCINGS: the "+
		"controllers' corral_workers_fencings_total; NEW-EPOCH: workers that registered again with another epoch")
	if len(restarted) > 0 {
		fmt.Fprintf(w, "restarted controllers keep running detached, pids %s: stop them like the others "+
			"(scripts/cluster.sh stop finds them by their data dir)\n", joinInts(restarted))
	}
	var errs []error
	if killErr != nil {
		errs = append(errs, killErr)
	}
	if total.harmed() {
		errs = append(errs, fmt.Errorf("killing the leader every %s cost workers their sessions: %d fenced themselves, "+
			"%d were fenced by a leader, the controllers fenced %.0f, %d registered again with a new epoch",
			every, total.selfFenced, total.ctrlFenced, total.ctrlFencings, total.newEpoch))
	} else if killErr == nil {
		fmt.Fprintln(w, "failover cost: no worker fenced or given a new epoch")
	}
	return errors.Join(errs...)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

// finish samples the controllers' counters at the end of the measurement and prints the report.
func (k *leaderKiller) finish(ctx context.Context, sims []*simWorker, t0, end time.Time) error {
	k.ctrl = append(k.ctrl, k.sampleControllers(context.WithoutCancel(ctx)))
	sessions := make([]*simSession, len(sims))
	for i, s := range sims {
		sessions[i] = &s.session
	}
	ws := failoverWindows(k.kills, sessions, t0, end, k.ctrl)
	var running []int // a restarted controller may have been killed again as leader
	for _, pid := range k.restarted {
		if !processGone(pid) {
			running = append(running, pid)
		}
	}
	return printFailover(k.out, k.cfg.every, ws, k.err, running)
}
