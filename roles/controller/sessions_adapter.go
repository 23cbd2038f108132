package controller

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/api/view"
	"github.com/corral-dev/corral/roles/controller/sessions"
)

// The controller's side of the worker sessions (package sessions): what
// the sessions need of the controller, and the API's answers for theirs.

// DefaultSessionTimeout is how long a worker may stay silent before the
// leader fences it. The worker's self-fence time derives from the same value.
const DefaultSessionTimeout = sessions.DefaultSessionTimeout

// SessionReadBuffer is the per-session read buffer at the leader (bufio's
// minimum is 16 bytes).
const SessionReadBuffer = sessions.SessionReadBuffer

// sessionsCluster is the controller as the sessions see it
// (sessions.Cluster). A separate type, so that proposing and reading
// through raft do not become part of the Controller's exported methods.
type sessionsCluster struct{ c *Controller }

func (s sessionsCluster) State() *metadata.State { return s.c.State() }
func (s sessionsCluster) Term() uint64           { return s.c.Term() }
func (s sessionsCluster) LeaderID() uint64       { return s.c.LeaderID() }

func (s sessionsCluster) ProposePayload(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error) {
	return s.c.r.ProposePayload(ctx, op, payload)
}

func (s sessionsCluster) MemberAddress(id uint64) (cluster, httpAddr string) {
	return s.c.r.MemberAddress(id)
}

func (s sessionsCluster) LinearizableRead(ctx context.Context) error {
	return s.c.r.LinearizableRead(ctx)
}

func (c *Controller) startWorkerSessions() error {
	ln := c.cfg.WorkerListener
	if ln == nil {
		l, err := c.r.ListenWorkers()
		if err != nil {
			return err
		}
		ln = l
	}
	c.workers = sessions.New(sessionsCluster{c}, sessions.Config{
		NodeID: c.cfg.NodeID, SessionTimeout: c.cfg.SessionTimeout, RequestTimeout: c.cfg.RequestTimeout,
		Logger: c.log, Registerer: c.reg, Listener: ln, Stopped: ErrStopped,
	})
	c.reg.MustRegister(&workerStateCollector{c: c})
	return nil
}

// workerStateCollector reports corral_workers{state} at scrape time, from
// the same merged view as the API (WorkerCounts).
type workerStateCollector struct{ c *Controller }

var workersDesc = prometheus.NewDesc("corral_workers",
	"Workers per state: the leader's view (with suspect); a follower reports the replicated states only.",
	[]string{"state"}, nil)

func (w *workerStateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- workersDesc }

func (w *workerStateCollector) Collect(ch chan<- prometheus.Metric) {
	counts := w.c.WorkerCounts(time.Now())
	for _, s := range view.WorkerStates {
		ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}
