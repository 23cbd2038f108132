package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/corral-dev/corral/metadata"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
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

// Typed refusals of a peer's certificate identity, wrapped by the
// handshake error; each is its own rejection reason in the metrics.
var (
	ErrNoPeerIdentity  = errors.New("peer certificate names no corral identity")
	ErrForeignCluster  = errors.New("peer certificate names another cluster")
	ErrRoleNotAllowed  = errors.New("peer certificate's role may not use this connection")
	ErrWrongPeerID     = errors.New("peer certificate names another node id")
	errIdentityMissing = errors.New("identity check without a certificate")
)

// ErrRevoked is wrapped by the refusal of a peer whose certificate the
// bundle's Denied hook refuses (a revoked certificate). Denied's error
// should wrap it; one that does not is wrapped with it anyway.
var ErrRevoked = errors.New("peer certificate is revoked")

// TLSBundle is a node's TLS identity plus the cluster CA it trusts.
//
// The certificate, key and CA pool in use can be replaced while the node
// runs (Reload): every tls.Config the bundle makes reads the current ones
// at each handshake, so new connections use the new material and existing
// ones are left alone. Self never changes.
type TLSBundle struct {
	// Self is who this node's certificate says it is.
	Self Identity
	// CA holds the cluster CA; peers must present certificates it signed.
	// It is the pool the bundle was made with: after a Reload the pool in
	// use is another (see Current).
	CA *x509.CertPool
	// Cert is this node's certificate and key, used as both server and
	// client certificate; like CA, the one the bundle was made with.
	Cert tls.Certificate
	// Denied, when set, is asked about every peer certificate that passed
	// the chain and identity checks, on every verify path (the server for
	// all protocols, the raft peer dialer, DialPeerHTTP and QUICDialer):
	// an error refuses the handshake, counted as reason "revoked"
	// (it should wrap ErrRevoked). QUIC.CloseDenied asks it again about
	// established connections. Set it before the bundle is used; it runs
	// on handshake goroutines and must be safe for concurrent use.
	Denied func(cert *x509.Certificate, id Identity) error

	dir      string     // where LoadTLSDir read the files; Reload reads them again
	reloadMu sync.Mutex // one Reload at a time
	cur      atomic.Pointer[tlsMaterial]
}

// tlsMaterial is one generation of a bundle's certificate, key and CA pool.
// It is never modified once published.
type tlsMaterial struct {
	ca   *x509.CertPool
	cert *tls.Certificate // Leaf is set
}

// material returns the certificate and CA pool in use: the last Reload's,
// or the fields the bundle was made with.
func (b *TLSBundle) material() *tlsMaterial {
	if m := b.cur.Load(); m != nil {
		return m
	}
	cert := b.Cert
	if cert.Leaf == nil && len(cert.Certificate) > 0 {
		cert.Leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	b.cur.CompareAndSwap(nil, &tlsMaterial{ca: b.CA, cert: &cert})
	return b.cur.Load()
}

// Current returns the certificate and CA pool new handshakes use. Treat
// both as read-only.
func (b *TLSBundle) Current() (*tls.Certificate, *x509.CertPool) {
	m := b.material()
	return m.cert, m.ca
}

// Leaf returns the node certificate new handshakes present (nil only for a
// bundle made without one).
func (b *TLSBundle) Leaf() *x509.Certificate { return b.material().cert.Leaf }

// Reload reads the TLS directory the bundle was loaded from again and, if
// the files are usable, makes them the material of every later handshake;
// connections already established keep going. It refuses, keeping the
// current material, files that LoadTLSDir would refuse (missing, garbled,
// a key that does not match, a certificate that does not chain to ca.pem
// or has expired) and a certificate for another identity than Self: a
// node's identity does not change while it runs.
//
// The new ca.pem replaces the trusted pool: to move to a new CA, list the
// old and the new CA in ca.pem until every node has a certificate of the
// new one.
func (b *TLSBundle) Reload() error {
	if b.dir == "" {
		return errors.New("reload TLS files: this bundle was not loaded from a TLS directory")
	}
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	nb, err := LoadTLSDir(b.dir)
	if err != nil {
		return fmt.Errorf("reload TLS files: %w", err)
	}
	if nb.Self != b.Self {
		return fmt.Errorf("reload TLS files: %s is for %s, but this node runs as %s; "+
			"a node's identity cannot change while it runs (issue its certificate with the same role and id, or restart it)",
			filepath.Join(b.dir, NodeFile), nb.Self, b.Self)
	}
	b.cur.Store(nb.material())
	return nil
}

// ReloadAndLog is Reload followed by one log line: Info with the new
// certificate's serial and expiry, or Error with why the files were
// refused (the node keeps its current certificate).
func (b *TLSBundle) ReloadAndLog(log *slog.Logger) error {
	if err := b.Reload(); err != nil {
		log.Error("TLS reload failed; keeping the current certificate", "dir", b.dir, "err", err)
		return err
	}
	leaf := b.Leaf()
	log.Info("TLS certificate reloaded", "dir", b.dir, "identity", b.Self.String(), "serial", SerialHex(leaf),
		"not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// SerialHex is a certificate's serial number as upper-case hex in whole
// bytes, the way 'openssl x509 -noout -serial' prints it and the deny-list
// keeps it.
func SerialHex(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	return metadata.SerialHex(c.SerialNumber)
}

// getCertificate serves the current certificate (tls.Config.GetCertificate).
func (b *TLSBundle) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return b.material().cert, nil
}

// getClientCertificate presents the current certificate
// (tls.Config.GetClientCertificate).
func (b *TLSBundle) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return b.material().cert, nil
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
	self, err := IdentityOf(leaf)
	if err != nil {
		return nil, fmt.Errorf("node certificate %s: %w: issue one with 'corral certs issue --role ROLE --id ID'", certPath, err)
	}
	b := &TLSBundle{CA: pool, Cert: cert, Self: self, dir: dir}
	// Catch a node cert from another CA at startup rather than as a stream
	// of rejected handshakes later.
	if err := b.verifyChain(cert.Certificate, x509.ExtKeyUsageAny); err != nil {
		return nil, fmt.Errorf("node certificate %s does not match CA %s: %w", certPath, caPath, err)
	}
	return b, nil
}

// serverConfig returns a server config: TLS 1.3 only, the current
// certificate, client certificates required and verified against the
// cluster CA (RequireAndVerifyClientCert). ClientCAs is the pool in use
// when it is called; serverConfigCounting, which the transport uses, reads
// the current pool at every handshake instead.
func (b *TLSBundle) serverConfig(alpn ...string) *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		GetCertificate:         b.getCertificate,
		ClientAuth:             tls.RequireAndVerifyClientCert,
		ClientCAs:              b.material().ca,
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
//
// The server must name a controller of this node's cluster.
func (b *TLSBundle) ClientConfig(alpn ...string) *tls.Config {
	return b.clientConfig(nil, 0, alpn...)
}

// serverConfigCounting is serverConfig with the chain check moved into
// VerifyConnection so that rejections are observable (crypto/tls fails a
// RequireAndVerifyClientCert handshake before any callback runs). The
// verification is the same: a client certificate is required, it must chain
// to the CA and carry the ClientAuth extended key usage. The CA is the one
// in use at the handshake (see Reload).
//
// The peer's identity must name this node's cluster and a role allowed on
// the negotiated protocol (see rolesFor): a worker certificate never reaches
// the raft listener.
func (b *TLSBundle) serverConfigCounting(onReject func(error), alpn ...string) *tls.Config {
	c := b.serverConfig(alpn...)
	c.ClientAuth = tls.RequireAnyClientCert
	c.ClientCAs = nil
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		err := b.verifyPeer(cs, x509.ExtKeyUsageClientAuth, func(id Identity) error {
			return roleAllowed(id, rolesFor(cs.NegotiatedProtocol))
		})
		if err != nil && onReject != nil {
			onReject(err)
		}
		return err
	}
	return c
}

// rolesFor is who may connect with a protocol: workers only on the worker
// protocol, controllers on everything (a controller also speaks for the
// worker in its own process, in combined mode).
func rolesFor(alpn string) []Role {
	if alpn == ALPNWorker {
		return []Role{RoleController, RoleWorker}
	}
	return []Role{RoleController}
}

func roleAllowed(id Identity, roles []Role) error {
	for _, r := range roles {
		if id.Role == r {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrRoleNotAllowed, id)
}

// wantController accepts only controller node (any controller if node is 0).
func wantController(node uint64) func(Identity) error {
	return func(id Identity) error {
		if err := roleAllowed(id, []Role{RoleController}); err != nil {
			return err
		}
		if node != 0 && id.NodeID() != node {
			return fmt.Errorf("%w: want controller %d, got %s", ErrWrongPeerID, node, id)
		}
		return nil
	}
}

// PeerIdentity returns the identity a verified TLS connection's peer
// certificate names.
func PeerIdentity(cs tls.ConnectionState) (Identity, error) {
	if len(cs.PeerCertificates) == 0 {
		return Identity{}, errIdentityMissing
	}
	return IdentityOf(cs.PeerCertificates[0])
}

// clientConfig checks the server's chain and that it is a controller of
// this cluster (node, when non-zero).
func (b *TLSBundle) clientConfig(onReject func(error), node uint64, alpn ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The current certificate and (in verifyPeer) CA at each
		// handshake, so a Reload needs no new config.
		GetClientCertificate: b.getClientCertificate,
		NextProtos:           alpn,
		// Replaced by VerifyConnection below, which checks the chain
		// against the CA but not the host name (see ClientConfig).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			err := b.verifyPeer(cs, x509.ExtKeyUsageServerAuth, wantController(node))
			if err != nil && onReject != nil {
				onReject(err)
			}
			return err
		},
	}
}

// verifyPeer checks the chain, then that the leaf names an identity of this
// cluster that check accepts, then that Denied does not refuse it.
func (b *TLSBundle) verifyPeer(cs tls.ConnectionState, usage x509.ExtKeyUsage, check func(Identity) error) error {
	raw := make([][]byte, 0, len(cs.PeerCertificates))
	for _, c := range cs.PeerCertificates {
		raw = append(raw, c.Raw)
	}
	if err := b.verifyChain(raw, usage); err != nil {
		return err
	}
	id, err := IdentityOf(cs.PeerCertificates[0])
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoPeerIdentity, err)
	}
	if id.Cluster != b.Self.Cluster {
		return fmt.Errorf("%w: %s, this node is in cluster %q", ErrForeignCluster, id, b.Self.Cluster)
	}
	if err := check(id); err != nil {
		return err
	}
	return b.checkDenied(cs.PeerCertificates[0], id)
}

// checkDenied asks the Denied hook about a peer certificate; its refusal
// always wraps ErrRevoked and names the certificate.
func (b *TLSBundle) checkDenied(cert *x509.Certificate, id Identity) error {
	if b.Denied == nil {
		return nil
	}
	err := b.Denied(cert, id)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrRevoked) {
		err = fmt.Errorf("%w: %w", ErrRevoked, err)
	}
	return fmt.Errorf("%s (serial %s): %w", id, SerialHex(cert), err)
}

// deniedConn is checkDenied for an established connection's peer: nil when
// the connection has no verified peer identity to judge.
func (b *TLSBundle) deniedConn(cs tls.ConnectionState) error {
	if b.Denied == nil || len(cs.PeerCertificates) == 0 {
		return nil
	}
	id, err := IdentityOf(cs.PeerCertificates[0])
	if err != nil {
		return nil // refused at the handshake; cannot be here
	}
	return b.checkDenied(cs.PeerCertificates[0], id)
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
		Roots:         b.material().ca,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUntrustedCert, err)
	}
	return nil
}
