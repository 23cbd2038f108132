package zk

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// metrics are the server's prometheus collectors (corral_zk_*), plus
// plain counters for Stats and the four-letter words.
type metrics struct {
	reg         prometheus.Registerer
	collectors  []prometheus.Collector
	connections prometheus.Gauge
	sessions    prometheus.Gauge
	watches     prometheus.Gauge
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	watchEvents prometheus.Counter
	refused     *prometheus.CounterVec
	expirations prometheus.Counter
	stranded    prometheus.Counter

	received, sent atomic.Uint64
	opsMu          sync.Mutex
	ops            map[string]uint64
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reg: reg, ops: map[string]uint64{},
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "corral_zk_connections",
			Help: "Open ZooKeeper client connections."}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "corral_zk_sessions",
			Help: "ZooKeeper sessions with a connection to this controller."}),
		watches: prometheus.NewGauge(prometheus.GaugeOpts{Name: "corral_zk_watches",
			Help: "ZooKeeper watches registered on this controller."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_zk_requests_total",
			Help: "ZooKeeper requests served, by op."}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_zk_request_errors_total",
			Help: "ZooKeeper replies with an error code, by code."}, []string{"code"}),
		watchEvents: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_zk_watch_events_total",
			Help: "ZooKeeper watch events queued to clients."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "corral_zk_connections_refused_total",
			Help: "ZooKeeper connections refused or dropped by the server, by reason."}, []string{"reason"}),
		expirations: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_zk_session_expirations_total",
			Help: "ZooKeeper sessions found expired while connected here."}),
		stranded: prometheus.NewCounter(prometheus.CounterOpts{Name: "corral_zk_sessions_moved_total",
			Help: "ZooKeeper connections closed because their keep-alives stopped reaching the leader, so their clients move to another controller."}),
	}
	m.collectors = []prometheus.Collector{m.connections, m.sessions, m.watches, m.requests, m.errors, m.watchEvents, m.refused, m.expirations, m.stranded}
	if reg == nil {
		return m, nil
	}
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}

func (m *metrics) countOp(op jute.Op) {
	name := op.String()
	m.requests.WithLabelValues(name).Inc()
	m.opsMu.Lock()
	m.ops[name]++
	m.opsMu.Unlock()
}

func (m *metrics) opCounts() map[string]uint64 {
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	out := make(map[string]uint64, len(m.ops))
	for k, v := range m.ops {
		out[k] = v
	}
	return out
}
