package zk

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zk"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestTLS: with Config.TLS the port speaks TLS (secureClientPort).
func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	b := newFakeBackend()
	s := startServer(t, b, Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	dial := func() *tls.Conn {
		c, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{RootCAs: pool})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	c := dial()
	_, err := c.Write([]byte("ruok"))
	require.NoError(t, err)
	out, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, "imok", string(out))

	c = dial()
	_, err = c.Write(jute.AppendFrame(nil, &jute.ConnectRequest{TimeOut: 4000}))
	require.NoError(t, err)
	body, err := jute.NewFrameReader(c, 0).ReadFrame()
	require.NoError(t, err)
	var resp jute.ConnectResponse
	require.NoError(t, jute.Decode(body, &resp))
	require.NotZero(t, resp.SessionID)

	// A plain-text client on the TLS port goes nowhere.
	r := dialRaw(t, s.Addr().String())
	r.write(jute.AppendFrame(nil, &jute.ConnectRequest{TimeOut: 4000}))
	require.True(t, r.closed())
}
