package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File names inside a TLS directory (see CreateCerts).
const (
	CAFile      = "ca.pem"
	CAKeyFile   = "ca-key.pem"
	NodeFile    = "node.pem"
	NodeKeyFile = "node-key.pem"
)

// ErrUntrustedCert is wrapped by the verification error when a peer presents
// a certificate that does not chain to the cluster CA.
var ErrUntrustedCert = errors.New("peer certificate not signed by the cluster CA")

// TLSBundle is a node's TLS identity plus the cluster CA it trusts.
type TLSBundle struct {
	// CA holds the cluster CA; peers must present certificates it signed.
	CA *x509.CertPool
	// Cert is this node's certificate and key, used as both server and
	// client certificate.
	Cert tls.Certificate
}

// LoadTLSDir loads ca.pem, node.pem and node-key.pem from dir. Errors name
// the offending file. The node certificate must be signed by ca.pem.
func LoadTLSDir(dir string) (*TLSBundle, error) {
	caPath := filepath.Join(dir, CAFile)
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate %s: %w", caPath, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("parse CA certificate %s: no PEM certificate found", caPath)
	}
	certPath, keyPath := filepath.Join(dir, NodeFile), filepath.Join(dir, NodeKeyFile)
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("read node TLS file %s: %w", p, err)
		}
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("load node key pair %s + %s: %w", certPath, keyPath, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse node certificate %s: %w", certPath, err)
	}
	cert.Leaf = leaf
	b := &TLSBundle{CA: pool, Cert: cert}
	// Catch a node cert from another CA at startup rather than as a stream
	// of rejected handshakes later.
	if err := b.verifyChain(cert.Certificate, x509.ExtKeyUsageAny); err != nil {
		return nil, fmt.Errorf("node certificate %s does not match CA %s: %w", certPath, caPath, err)
	}
	return b, nil
}

// ServerConfig returns a server config: TLS 1.3 only, client certificates
// required and verified against the cluster CA (RequireAndVerifyClientCert).
func (b *TLSBundle) ServerConfig(alpn ...string) *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{b.Cert},
		ClientAuth:             tls.RequireAndVerifyClientCert,
		ClientCAs:              b.CA,
		NextProtos:             alpn,
		SessionTicketsDisabled: true,
	}
}

// ClientConfig returns a client config: TLS 1.3 only, presenting this node's
// certificate and verifying the server's certificate chain against the
// cluster CA. The host name is deliberately NOT checked: peers are dialled by
// whatever address the operator configured (IP, DNS name, NAT address), and
// possession of a key signed by the private cluster CA is what identifies a
// cluster member. The CA must therefore be dedicated to one cluster.
func (b *TLSBundle) ClientConfig(alpn ...string) *tls.Config {
	return b.clientConfig(nil, alpn...)
}

// serverConfigCounting is ServerConfig with the chain check moved into
// VerifyConnection so that rejections are observable (crypto/tls fails a
// RequireAndVerifyClientCert handshake before any callback runs). The
// verification is the same: a client certificate is required, it must chain
// to the CA and carry the ClientAuth extended key usage.
func (b *TLSBundle) serverConfigCounting(onReject func(error), alpn ...string) *tls.Config {
	c := b.ServerConfig(alpn...)
	c.ClientAuth = tls.RequireAnyClientCert
	c.ClientCAs = nil
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return b.verifyPeer(cs, x509.ExtKeyUsageClientAuth, onReject)
	}
	return c
}

func (b *TLSBundle) clientConfig(onReject func(error), alpn ...string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{b.Cert},
		RootCAs:      b.CA,
		NextProtos:   alpn,
		// Replaced by VerifyConnection below, which checks the chain
		// against the CA but not the host name (see ClientConfig).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return b.verifyPeer(cs, x509.ExtKeyUsageServerAuth, onReject)
		},
	}
}

func (b *TLSBundle) verifyPeer(cs tls.ConnectionState, usage x509.ExtKeyUsage, onReject func(error)) error {
	raw := make([][]byte, 0, len(cs.PeerCertificates))
	for _, c := range cs.PeerCertificates {
		raw = append(raw, c.Raw)
	}
	err := b.verifyChain(raw, usage)
	if err != nil && onReject != nil {
		onReject(err)
	}
	return err
}

// verifyChain verifies raw[0] (leaf) with raw[1:] as intermediates.
func (b *TLSBundle) verifyChain(raw [][]byte, usage x509.ExtKeyUsage) error {
	if len(raw) == 0 {
		return fmt.Errorf("%w: no certificate presented", ErrUntrustedCert)
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("%w: parse certificate: %v", ErrUntrustedCert, err)
		}
		certs = append(certs, c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{
		Roots:         b.CA,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUntrustedCert, err)
	}
	return nil
}
