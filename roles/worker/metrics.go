package worker

import "github.com/prometheus/client_golang/prometheus"

// workerAgentMetrics are a worker's own series.
type workerAgentMetrics struct {
	rtt             prometheus.Histogram
	sent            prometheus.Counter
	acked           prometheus.Counter
	registrations   prometheus.Counter
	selfFencings    prometheus.Counter
	refusedFencings prometheus.Counter
	staleCtrl       prometheus.Counter
	reconnects      prometheus.Counter
	beckoned        prometheus.Counter
	probesAbandoned prometheus.Counter
	standbys        prometheus.Gauge
	alive           prometheus.Gauge
	epoch           prometheus.Gauge
	ctrlEpoch       prometheus.Gauge
	ackedCtrl       prometheus.Gauge
}

func newWorkerAgentMetrics(reg prometheus.Registerer) *workerAgentMetrics {
	wm := &workerAgentMetrics{
		rtt: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_worker_heartbeat_rtt_seconds", Help: "Round trip of a heartbeat to the leader and its ack.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18)}),
		standbys: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_worker_standby_connections",
			Help: "Idle connections this worker keeps to controllers other than the leader, for failover without a handshake."}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_heartbeats_sent_total", Help: "Heartbeats this worker sent."}),
		acked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_heartbeats_acked_total", Help: "Heartbeats acknowledged by a leader."}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_registrations_total", Help: "Registrations that gave this worker a new epoch."}),
		selfFencings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_self_fencings_total",
			Help: "Times this worker fenced itself: no heartbeat acknowledged for its self-fence time."}),
		refusedFencings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_fenced_by_controller_total",
			Help: "Times a leader refused this worker's epoch as fenced or superseded."}),
		staleCtrl: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_stale_epoch_refused_total",
			Help: "Controller messages refused because their controller epoch was older than one already seen."}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_connections_total", Help: "Connections this worker opened to controllers."}),
		beckoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_beckons_total", Help: "Times a controller this worker held a standby to said it leads now, and the worker pinged it at once."}),
		probesAbandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_worker_probes_abandoned_total",
			Help: "Times a controller asked who leads, while the leader was silent, stayed silent too, and the worker asked elsewhere or on a new connection."}),
		alive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_worker_alive", Help: "1 while this worker holds a live session, 0 while fenced."}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_worker_epoch", Help: "This worker's current (or last) epoch."}),
		ctrlEpoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_worker_controller_epoch", Help: "Highest controller epoch this worker has seen."}),
		ackedCtrl: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_worker_session_controller_epoch",
			Help: "Controller epoch of the leader that acknowledged this worker's latest heartbeat or registration: where its session is held."}),
	}
	if reg != nil {
		reg.MustRegister(wm.rtt, wm.sent, wm.acked, wm.registrations, wm.selfFencings, wm.refusedFencings,
			wm.staleCtrl, wm.reconnects, wm.beckoned, wm.probesAbandoned, wm.standbys, wm.alive, wm.epoch, wm.ctrlEpoch, wm.ackedCtrl)
	}
	return wm
}
