package transport

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certificate lifetimes used by CreateCerts. The CA lives long because
// replacing it means re-issuing every node; node certificates are cheap to
// re-issue (run CreateCerts again on the same directory: the CA is reused).
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	NodeValidity = 2 * 365 * 24 * time.Hour
	// clockSkew backdates NotBefore so that a peer whose clock is a little
	// behind does not reject a freshly issued certificate.
	clockSkew = time.Hour
)

// CreateCerts writes an ECDSA P-256 CA (ca.pem, ca-key.pem) and a node
// certificate (node.pem, node-key.pem) into dir, creating dir (0700) if
// needed. Keys are written with mode 0600.
//
// If dir already holds ca.pem and ca-key.pem, that CA is reused and only the
// node certificate is (re)issued, so several nodes' directories can share one
// CA: create the first directory, copy its ca.pem and ca-key.pem into the
// others, and run CreateCerts on each. The node certificate carries both the
// ServerAuth and ClientAuth extended key usages (a node is server and client
// of its peers) and SANs from hosts (IP literals become IP SANs, everything
// else DNS SANs); empty hosts means localhost, 127.0.0.1 and ::1.
func CreateCerts(dir string, hosts []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create TLS dir %s: %w", dir, err)
	}
	caCert, caKey, err := loadOrCreateCA(dir)
	if err != nil {
		return err
	}
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate node key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"corral"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(NodeValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("sign node certificate: %w", err)
	}
	// Key first: a node.pem without its key would be useless.
	if err := writeKey(filepath.Join(dir, NodeKeyFile), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, NodeFile), "CERTIFICATE", der, 0o644)
}

func loadOrCreateCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)
	_, certErr := os.Stat(certPath)
	_, keyErr := os.Stat(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		return loadCA(certPath, keyPath)
	case certErr == nil:
		return nil, nil, fmt.Errorf("reuse CA: %s exists but %s: %w", certPath, keyPath, keyErr)
	case keyErr == nil:
		return nil, nil, fmt.Errorf("reuse CA: %s exists but %s: %w", keyPath, certPath, certErr)
	case !errors.Is(certErr, os.ErrNotExist):
		return nil, nil, fmt.Errorf("stat %s: %w", certPath, certErr)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "corral cluster CA", Organization: []string{"corral"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse new CA certificate: %w", err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return nil, nil, err
	}
	if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func loadCA(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, fmt.Errorf("read CA certificate %s: %w", certPath, err)
	}
	blk, _ := pem.Decode(certPEM)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("parse CA certificate %s: no PEM CERTIFICATE block", certPath)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA certificate %s: %w", certPath, err)
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("CA certificate %s is not a CA", certPath)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("read CA key %s: %w", keyPath, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, fmt.Errorf("parse CA key %s: no PEM block", keyPath)
	}
	var parsed any
	switch kb.Type {
	case "EC PRIVATE KEY":
		parsed, err = x509.ParseECPrivateKey(kb.Bytes)
	default:
		parsed, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA key %s: %w", keyPath, err)
	}
	signer, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("CA key %s: unsupported key type %T", keyPath, parsed)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if pub, ok := signer.Public().(equaler); !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, fmt.Errorf("CA key %s does not match CA certificate %s", keyPath, certPath)
	}
	return cert, signer, nil
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate certificate serial: %w", err)
	}
	return s, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key for %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM writes atomically (temp file + rename) so a crash never leaves a
// truncated key or certificate behind.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := pem.Encode(tmp, &pem.Block{Type: typ, Bytes: der}); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	return nil
}
