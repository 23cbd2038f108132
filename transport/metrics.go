package transport

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Rejection reasons for corral_transport_peer_rejected_total.
const (
	RejectUntrustedCert = "untrusted_cert" // TLS peer cert not from the cluster CA
	RejectClusterID     = "cluster_id"     // stream header names another cluster
	RejectBadHeader     = "bad_header"     // garbage or unknown stream header
	RejectWrongNode     = "wrong_node"     // message addressed to another node id / from a spoofed id
)

type metrics struct {
	sent        *prometheus.CounterVec
	received    *prometheus.CounterVec
	dropped     prometheus.Counter
	rejected    *prometheus.CounterVec
	rtt         *prometheus.GaugeVec
	snapsSent   prometheus.Counter
	snapsFailed prometheus.Counter
}

// newMetrics builds the transport's metrics and registers them with reg
// (nil => unregistered, so many transports can live in one test process).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_transport_messages_sent_total",
			Help: "Raft messages written to peer streams, by message type.",
		}, []string{"type"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_transport_messages_received_total",
			Help: "Raft messages received from peers, by message type.",
		}, []string{"type"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_transport_messages_dropped_total",
			Help: "Raft messages dropped: queue full, peer down, unknown peer or write error.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_transport_peer_rejected_total",
			Help: "Peers refused, by reason (untrusted_cert, cluster_id, bad_header, wrong_node).",
		}, []string{"reason"}),
		rtt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "corral_transport_peer_rtt_seconds",
			Help: "Smoothed QUIC round-trip time of the outbound connection to each peer.",
		}, []string{"peer"}),
		snapsSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_transport_snapshots_sent_total",
			Help: "MsgSnap messages delivered and acknowledged by the peer.",
		}),
		snapsFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_transport_snapshots_failed_total",
			Help: "MsgSnap messages that could not be delivered.",
		}),
	}
	// Pre-create the reject series so dashboards see zeros.
	for _, r := range []string{RejectUntrustedCert, RejectClusterID, RejectBadHeader, RejectWrongNode} {
		m.rejected.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	reg1 := func(c prometheus.Collector) prometheus.Collector {
		got, err := register(reg, c)
		if err != nil {
			errs = append(errs, err)
		}
		return got
	}
	m.sent = reg1(m.sent).(*prometheus.CounterVec)
	m.received = reg1(m.received).(*prometheus.CounterVec)
	m.dropped = reg1(m.dropped).(prometheus.Counter)
	m.rejected = reg1(m.rejected).(*prometheus.CounterVec)
	m.rtt = reg1(m.rtt).(*prometheus.GaugeVec)
	m.snapsSent = reg1(m.snapsSent).(prometheus.Counter)
	m.snapsFailed = reg1(m.snapsFailed).(prometheus.Counter)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register transport metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the identical collector registered
// earlier (a transport re-created in the same process, e.g. a restarted
// node in a test, keeps counting into the same series).
func register(reg prometheus.Registerer, c prometheus.Collector) (prometheus.Collector, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if fmt.Sprintf("%T", are.ExistingCollector) == fmt.Sprintf("%T", c) {
			return are.ExistingCollector, nil
		}
	}
	return c, err
}
