package replica

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// controllerMetrics are the controller's Prometheus series. Each controller
// has its own registry so several can run in one test process.
type controllerMetrics struct {
	term               prometheus.Gauge
	hasLeader          prometheus.Gauge
	isLeader           prometheus.Gauge
	leaderChanges      prometheus.Counter
	commitIndex        prometheus.Gauge
	appliedIndex       prometheus.Gauge
	proposalsCommitted prometheus.Counter
	proposalsFailed    *prometheus.CounterVec
	entriesSkipped     prometheus.Counter
	msgsDropped        *prometheus.CounterVec
	applyDuration      prometheus.Histogram
	syncDuration       prometheus.Histogram
	snapshots          prometheus.Counter
	snapshotSize       prometheus.Gauge
	snapshotDuration   *prometheus.HistogramVec
	voters             prometheus.Gauge
	learners           prometheus.Gauge
	failureTolerance   prometheus.Gauge
	leaderDeaths       prometheus.Counter
	deathCampaigns     prometheus.Counter
	bootCampaigns      prometheus.Counter
	tickDelay          prometheus.Histogram
	heartbeatGap       prometheus.Histogram
}

func newControllerMetrics(reg *prometheus.Registry) *controllerMetrics {
	m := &controllerMetrics{
		term: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_term", Help: "Current raft term seen by this controller."}),
		hasLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_has_leader", Help: "1 if this controller knows a leader, else 0."}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_is_leader", Help: "1 if this controller is the raft leader, else 0."}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_leader_changes_total", Help: "Leader changes seen by this controller."}),
		commitIndex: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_commit_index", Help: "Highest log index known to be committed."}),
		appliedIndex: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_applied_index", Help: "Highest log index applied to the state machine."}),
		proposalsCommitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_proposals_committed_total", Help: "Proposals from this controller applied."}),
		msgsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_raft_messages_dropped_total",
			Help: "Raft messages from peers dropped before raft saw them: not a member, a type or content a peer may not send, or leader-only from a non-leader."},
			[]string{"reason"}),
		proposalsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_raft_proposals_failed_total", Help: "Proposals from this controller that failed, by reason."},
			[]string{"reason"}),
		entriesSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_entries_term_changed_total",
			Help: "Committed entries every replica skipped because a leader of another term than their proposer's appended them (a proposal that crossed a leader change)."}),
		applyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_raft_apply_duration_seconds", Help: "Time to apply one batch of committed entries.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16)}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_raftlog_sync_duration_seconds", Help: "Time to persist one Ready as a synced Pebble batch.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_snapshots_total", Help: "State-machine snapshots taken or installed."}),
		snapshotSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_snapshot_size_bytes", Help: "Size of the latest state-machine snapshot."}),
		snapshotDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "corral_raft_snapshot_duration_seconds",
			Help:    "Time to take a state-machine snapshot: stage cut is the copy the apply loop waits for, write the encoding and synced save behind it.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"stage"}),
		voters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_voters", Help: "Voting controllers in the current configuration."}),
		learners: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_learners", Help: "Learners (non-voting, catching up) in the current configuration."}),
		failureTolerance: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_raft_failure_tolerance", Help: "Voters that may fail now without losing the quorum (0 when unhealthy)."}),
		leaderDeaths: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_leader_deaths_total", Help: "Times this follower heard that its leader's process ended and forgot it, to elect a successor at once."}),
		deathCampaigns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_death_campaigns_total", Help: "Campaigns this member started because its leader's process ended (not by election timeout)."}),
		bootCampaigns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_raft_boot_campaigns_total", Help: "Campaigns this member started as the lowest-id voter while no leader was known just after it started (not by election timeout)."}),
		tickDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "corral_raft_tick_delay_seconds",
			Help:    "How late the raft loop took each tick of its clock: while it is late the leader sends no heartbeats, and at an election timeout its followers elect another.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}}),
		heartbeatGap: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "corral_raft_heartbeat_interval_seconds",
			Help:    "On the leader, the time between two rounds of heartbeats: the heartbeat interval, unless the raft loop or raft's goroutine stalls; at an election timeout the followers elect another leader.",
			Buckets: []float64{0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2.5, 5}}),
	}
	reg.MustRegister(m.msgsDropped, m.voters, m.learners, m.failureTolerance, m.term, m.hasLeader, m.isLeader, m.leaderChanges, m.commitIndex, m.appliedIndex,
		m.proposalsCommitted, m.proposalsFailed, m.entriesSkipped, m.applyDuration, m.syncDuration, m.snapshots,
		m.snapshotSize, m.snapshotDuration, m.leaderDeaths, m.deathCampaigns, m.bootCampaigns, m.tickDelay, m.heartbeatGap,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
