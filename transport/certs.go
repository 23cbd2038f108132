package transport

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Certificate lifetimes. The CA lives long because replacing it means
// re-issuing every node; node certificates are cheap to re-issue.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	NodeValidity = 2 * 365 * 24 * time.Hour
	// clockSkew backdates NotBefore so that a peer whose clock is a little
	// behind does not reject a freshly issued certificate.
	clockSkew = time.Hour
)

// CreateCerts is the one-command shortcut for development and tests: it
// makes a CA in dir (or reuses the one there) and issues dir's node
// certificate for role and id into the same directory. A CA it makes names a
// random cluster. Production keeps the CA apart: CreateCA once, then
// IssueCert per node, so no node but a controller ever holds ca-key.pem.
func CreateCerts(dir string, role Role, id string, hosts []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create TLS dir %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, CAFile)); errors.Is(err, os.ErrNotExist) {
		if err := CreateCA(dir, ""); err != nil {
			return err
		}
	}
	_, err := IssueCert(dir, role, id, hosts, dir)
	return err
}

// CreateCA writes a new ECDSA P-256 CA (ca.pem, ca-key.pem) for cluster
// into dir, creating dir (0700) if needed; the key is written 0600. An empty
// cluster gets a random name. It refuses to replace an existing CA: every
// certificate it signed would stop working.
func CreateCA(dir, cluster string) error {
	if cluster == "" {
		var r [5]byte
		if _, err := rand.Read(r[:]); err != nil {
			return fmt.Errorf("pick a cluster name: %w", err)
		}
		cluster = "c-" + hex.EncodeToString(r[:])
	}
	if err := ValidateClusterName(cluster); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create CA dir %s: %w", dir, err)
	}
	for _, f := range []string{CAFile, CAKeyFile} {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s already exists: a CA is made once per cluster; issue node certificates with it instead", p)
		}
	}
	_, _, err := createCA(dir, cluster)
	return err
}

// IssueCert signs a node certificate for role and id with the CA in caDir
// and writes node.pem, node-key.pem and a copy of ca.pem (never the CA key)
// into outDir, creating it (0700) if needed. The certificate names
// corral://<cluster>/<role>/<id>, the cluster being the CA's. Controllers get
// the server and client key usages, workers only the client one (a worker
// never serves). Hosts become IP or DNS SANs; empty means localhost,
// 127.0.0.1 and ::1.
func IssueCert(caDir string, role Role, id string, hosts []string, outDir string) (Identity, error) {
	caCert, caKey, err := loadCA(filepath.Join(caDir, CAFile), filepath.Join(caDir, CAKeyFile))
	if err != nil {
		return Identity{}, err
	}
	cluster, err := clusterOfCA(caCert)
	if err != nil {
		return Identity{}, err
	}
	ident := Identity{Cluster: cluster, Role: role, ID: id}
	if err := ident.Validate(); err != nil {
		return Identity{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Identity{}, fmt.Errorf("generate node key: %w", err)
	}
	der, err := signNode(caCert, caKey, ident, hosts, &key.PublicKey) // ca.go
	if err != nil {
		return Identity{}, err
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return Identity{}, fmt.Errorf("create TLS dir %s: %w", outDir, err)
	}
	if err := writePEM(filepath.Join(outDir, CAFile), "CERTIFICATE", caCert.Raw, 0o644); err != nil {
		return Identity{}, err
	}
	// Key first: a node.pem without its key would be useless.
	if err := writeKey(filepath.Join(outDir, NodeKeyFile), key); err != nil {
		return Identity{}, err
	}
	if err := writePEM(filepath.Join(outDir, NodeFile), "CERTIFICATE", der, 0o644); err != nil {
		return Identity{}, err
	}
	return ident, nil
}

func createCA(dir, cluster string) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)
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
		URIs:                  []*url.URL{{Scheme: IdentityScheme, Host: cluster}},
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
