package sessions

import (
	"github.com/prometheus/client_golang/prometheus"
)

// sessionMetrics are the controller's worker-session series. The
// per-state gauge (corral_workers) is the controller's: it counts the
// merged view of replicated states and this leader's liveness.
type sessionMetrics struct {
	heartbeats           prometheus.Counter
	handleSeconds        prometheus.Histogram
	registrations        prometheus.Counter
	registrationsRefused *prometheus.CounterVec
	fencings             *prometheus.CounterVec
	leaves               prometheus.Counter
	staleRefused         prometheus.Counter
	redirects            prometheus.Counter
	beckons              prometheus.Counter
	badStreams           prometheus.Counter
	impersonations       prometheus.Counter
	assignments          prometheus.Counter
	reports              prometheus.Counter
}

func newSessionMetrics(reg prometheus.Registerer) *sessionMetrics {
	sm := &sessionMetrics{
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_heartbeats_total", Help: "Worker heartbeats accepted by this controller as leader."}),
		handleSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_workers_heartbeat_handle_seconds",
			Help: "Time the leader spends on one heartbeat, from decoded to answered.",
			// From a microsecond: the handler only touches an in-memory map.
			Buckets: prometheus.ExponentialBuckets(1e-6, 2.5, 14)}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_registrations_total", Help: "Worker registrations committed by this controller."}),
		registrationsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_workers_registrations_refused_total",
			Help: "Worker registrations refused, by reason (duplicate, not_ready, busy, invalid, commit_failed, leader_changed)."},
			[]string{"reason"}),
		fencings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_workers_fencings_total", Help: "Workers fenced by this controller, by reason."},
			[]string{"reason"}),
		leaves: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_leaves_total", Help: "Workers marked left after a graceful shutdown."}),
		staleRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_stale_epoch_refused_total",
			Help: "Heartbeats refused because they carried a fenced or superseded worker epoch."}),
		redirects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_redirects_total", Help: "Worker messages answered with a redirect to the leader."}),
		beckons: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_beckons_total", Help: "Worker streams this controller told, on becoming leader, that it leads now (a worker acts on it on a standby)."}),
		badStreams: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_bad_streams_total",
			Help: "Worker streams closed for a bad preamble, a malformed message or a protocol violation."}),
		impersonations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_impersonations_refused_total",
			Help: "Worker streams closed because a message named another worker than the stream's certificate."}),
		assignments: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_assignments_sent_total", Help: "Allocation assignments sent to workers by this leader."}),
		reports: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_workers_alloc_reports_total", Help: "Allocation report messages from workers committed by this leader."}),
	}
	sm.fencings.WithLabelValues("session_timeout")
	if reg != nil {
		reg.MustRegister(sm.heartbeats, sm.handleSeconds, sm.registrations, sm.registrationsRefused, sm.fencings,
			sm.leaves, sm.staleRefused, sm.redirects, sm.beckons, sm.badStreams, sm.impersonations, sm.assignments, sm.reports)
	}
	return sm
}
