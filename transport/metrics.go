package transport

import (
	"crypto/x509"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Rejection reasons for corral_transport_peer_rejected_total.
const (
	RejectUntrustedCert  = "untrusted_cert"  // TLS peer cert not from the cluster CA
	RejectClusterID      = "cluster_id"      // stream header names another cluster
	RejectBadHeader      = "bad_header"      // garbage or unknown stream header
	RejectWrongNode      = "wrong_node"      // message addressed to another node id / from a spoofed id, or a certificate of another node
	RejectNoIdentity     = "no_identity"     // certificate from the CA that names no corral identity
	RejectForeignCluster = "foreign_cluster" // certificate names another cluster
	RejectWrongRole      = "wrong_role"      // certificate's role may not use the protocol (a worker on the raft port)
	RejectRevoked        = "revoked"         // certificate refused by the bundle's Denied hook, at the handshake or by CloseDenied
)

type metrics struct {
	sent        *prometheus.CounterVec
	received    *prometheus.CounterVec
	dropped     prometheus.Counter
	rejected    *prometheus.CounterVec
	rtt         *prometheus.GaugeVec
	snapsSent   prometheus.Counter
	snapsFailed prometheus.Counter
	peerDeaths  prometheus.Counter
	unanswered  prometheus.Counter
	tcpFallback prometheus.Counter
	tcpUpgrades prometheus.Counter
	udp         *udpSocketCollector
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
			Help: "Peers refused, by reason (untrusted_cert, no_identity, foreign_cluster, wrong_role, wrong_node, revoked, cluster_id, bad_header).",
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
		peerDeaths: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_transport_peer_deaths_detected_total",
			Help: "Peer processes seen to end on the liveness link: the connection closed and the redial was refused or met a new incarnation.",
		}),
		unanswered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_transport_peer_unanswered_total",
			Help: "Outbound peer connections closed and dialed again because nothing came back for 2s after a write.",
		}),
		tcpFallback: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_transport_peer_tcp_fallbacks_total",
			Help: "Peer connections whose raft messages went over QUIC because the TCP message stream could not be opened.",
		}),
		tcpUpgrades: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_transport_peer_tcp_upgrades_total",
			Help: "Message streams to a peer moved from QUIC to TCP once TCP could be opened again.",
		}),
	}
	m.udp = newUDPSocketCollector("corral_transport_")
	// Pre-create the reject series so dashboards see zeros.
	for _, r := range []string{RejectUntrustedCert, RejectClusterID, RejectBadHeader, RejectWrongNode,
		RejectNoIdentity, RejectForeignCluster, RejectWrongRole, RejectRevoked} {
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
	m.peerDeaths = reg1(m.peerDeaths).(prometheus.Counter)
	m.unanswered = reg1(m.unanswered).(prometheus.Counter)
	m.tcpFallback = reg1(m.tcpFallback).(prometheus.Counter)
	m.tcpUpgrades = reg1(m.tcpUpgrades).(prometheus.Counter)
	m.udp = reg1(m.udp).(*udpSocketCollector)
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

// CertExpiryMetric is the gauge of when a certificate in use expires.
const CertExpiryMetric = "corral_tls_cert_expiry_timestamp_seconds"

// certExpiry exports leaf()'s NotAfter, read at every scrape, so a reloaded
// certificate shows at once.
type certExpiry struct {
	desc *prometheus.Desc
	leaf func() *x509.Certificate
}

func (c *certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *certExpiry) Collect(ch chan<- prometheus.Metric) {
	if l := c.leaf(); l != nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(l.NotAfter.Unix()))
	}
}

// RegisterCertExpiry exports corral_tls_cert_expiry_timestamp_seconds{cert=name}:
// the NotAfter, in Unix seconds, of the certificate leaf returns, read at
// every scrape (so it follows reloads). Names in use: "node" (the TLS dir's
// node.pem, TLSBundle.Leaf) and "http" (the API's HTTPS pair,
// KeyPairReloader.Leaf). If reg already exports name (a combined node's
// controller and worker share a registry and a TLS dir), the first
// registration stays and nil is returned.
func RegisterCertExpiry(reg prometheus.Registerer, name string, leaf func() *x509.Certificate) error {
	if reg == nil {
		return nil
	}
	c := &certExpiry{
		desc: prometheus.NewDesc(CertExpiryMetric,
			"When the certificate in use expires (its NotAfter), in Unix seconds, by certificate: node (--tls-dir) or http (--http-tls-cert).",
			nil, prometheus.Labels{"cert": name}),
		leaf: leaf,
	}
	if _, err := register(reg, c); err != nil {
		return fmt.Errorf("register %s{cert=%q}: %w", CertExpiryMetric, name, err)
	}
	return nil
}

// udpSocketCollector reports, at each scrape, the kernel's counts for a
// UDP socket (udpstats.go) as PREFIXudp_receive_drops_total (datagrams
// dropped because the socket's receive buffer was full) and
// PREFIXudp_receive_queue_bytes (bytes waiting in it). A socket the
// kernel cannot report on (closed, or not Linux) yields no sample.
type udpSocketCollector struct {
	src   atomic.Pointer[func() (UDPSocket, error)]
	drops *prometheus.Desc
	queue *prometheus.Desc
}

// newUDPSocketCollector returns a collector with no socket yet.
func newUDPSocketCollector(prefix string) *udpSocketCollector {
	return &udpSocketCollector{
		drops: prometheus.NewDesc(prefix+"udp_receive_drops_total",
			"Datagrams the kernel dropped because this process did not read its QUIC socket fast enough (the receive buffer was full); Linux only.", nil, nil),
		queue: prometheus.NewDesc(prefix+"udp_receive_queue_bytes",
			"Bytes waiting in the QUIC socket's receive buffer; Linux only.", nil, nil),
	}
}

// setSource points the collector at a socket: a transport or worker
// re-created in the same process keeps the registered collector.
func (c *udpSocketCollector) setSource(src func() (UDPSocket, error)) { c.src.Store(&src) }

// RegisterUDPSocketCollector registers a collector for src under prefix,
// or points the one registered earlier at src.
func RegisterUDPSocketCollector(reg prometheus.Registerer, prefix string, src func() (UDPSocket, error)) error {
	got, err := register(reg, newUDPSocketCollector(prefix))
	if err != nil {
		return fmt.Errorf("register UDP socket metrics: %w", err)
	}
	got.(*udpSocketCollector).setSource(src)
	return nil
}

// Describe implements prometheus.Collector.
func (c *udpSocketCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.drops
	ch <- c.queue
}

// Collect implements prometheus.Collector.
func (c *udpSocketCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.src.Load()
	if src == nil {
		return
	}
	s, err := (*src)()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(s.Drops))
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(s.RxQueue))
}
