package controller

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// reserveUDPAddr returns a loopback UDP address that was free a moment ago.
func reserveUDPAddr(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := c.LocalAddr().String()
	require.NoError(t, c.Close())
	return addr
}

// startTLSController starts a one-node controller on a real TLS dir (and
// the same pair for HTTPS), retrying if its reserved port was taken.
func startTLSController(t *testing.T, tlsDir string) (*Controller, string) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var c *Controller
	var addr string
	require.Eventually(t, func() bool {
		addr = reserveUDPAddr(t)
		var err error
		c, err = Start(Config{NodeID: 1, DataDir: t.TempDir(), ClusterAddr: addr, HTTPAddr: "127.0.0.1:0",
			Peers: map[uint64]string{1: addr}, TLSDir: tlsDir, Logger: quiet,
			HTTPTLSCert: filepath.Join(tlsDir, transport.NodeFile), HTTPTLSKey: filepath.Join(tlsDir, transport.NodeKeyFile)})
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	t.Cleanup(func() { _ = c.Close() })
	return c, addr
}

// servedSerial opens a new QUIC connection to addr on the worker protocol
// with client's certificate and returns the serial the server presented.
func servedSerial(t *testing.T, addr string, client *transport.TLSBundle) *big.Int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, client.ClientConfig(transport.ALPNWorker), nil)
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	return conn.ConnectionState().TLS.PeerCertificates[0].SerialNumber
}

// expiry reads corral_tls_cert_expiry_timestamp_seconds{cert}.
func expiry(t *testing.T, reg prometheus.Gatherer, cert string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != transport.CertExpiryMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cert" && l.GetValue() == cert {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{cert=%q}", transport.CertExpiryMetric, cert)
	return 0
}

// ReloadTLS makes the controller's new handshakes present the rotated
// certificate and export its expiry; a reload for another identity is
// refused and changes nothing.
func TestController_ReloadTLS(t *testing.T) {
	t.Parallel()
	tlsDir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1"}))
	first, err := transport.LoadTLSDir(tlsDir)
	require.NoError(t, err)
	c, addr := startTLSController(t, tlsDir)
	workerDir := t.TempDir()
	_, err = transport.IssueCert(tlsDir, transport.RoleWorker, "w-1", nil, workerDir)
	require.NoError(t, err)
	worker, err := transport.LoadTLSDir(workerDir)
	require.NoError(t, err)

	require.Equal(t, first.Cert.Leaf.SerialNumber, servedSerial(t, addr, worker))
	require.Equal(t, float64(first.Cert.Leaf.NotAfter.Unix()), expiry(t, c.Registry(), "node"))
	require.Equal(t, float64(first.Cert.Leaf.NotAfter.Unix()), expiry(t, c.Registry(), "http"))

	_, err = transport.IssueCert(tlsDir, transport.RoleController, "1", []string{"127.0.0.1"}, tlsDir)
	require.NoError(t, err)
	second, err := transport.LoadTLSDir(tlsDir)
	require.NoError(t, err)
	require.NoError(t, c.ReloadTLS())
	require.Equal(t, second.Cert.Leaf.SerialNumber, servedSerial(t, addr, worker))
	require.Equal(t, float64(second.Cert.Leaf.NotAfter.Unix()), expiry(t, c.Registry(), "node"))

	// Another identity's certificate in the TLS dir: refused, nothing changes.
	_, err = transport.IssueCert(tlsDir, transport.RoleController, "2", []string{"127.0.0.1"}, tlsDir)
	require.NoError(t, err)
	require.ErrorContains(t, c.ReloadTLS(), "a node's identity cannot change while it runs")
	require.Equal(t, second.Cert.Leaf.SerialNumber, servedSerial(t, addr, worker))

	// A controller on an injected transport has nothing to reload.
	mc := newMemCluster(t, 1, nil)
	require.ErrorContains(t, mc.node(1).ReloadTLS(), "uses no TLS dir")
}
