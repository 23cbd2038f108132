package transport

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"
)

// CA is a cluster CA with its key: what a controller started with
// --ca-dir signs joining workers' certificates with.
type CA struct {
	// Cert is the CA certificate (ca.pem).
	Cert *x509.Certificate
	// Cluster is the cluster the CA names (corral://<cluster>).
	Cluster string
	key     crypto.Signer
}

// LoadCA loads ca.pem and ca-key.pem from dir (as 'corral certs ca' made
// them) and checks that they belong together and name a cluster.
func LoadCA(dir string) (*CA, error) {
	cert, key, err := loadCA(filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, err
	}
	cluster, err := clusterOfCA(cert)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Cluster: cluster, key: key}, nil
}

// CheckCSR reports why a certificate request cannot be signed, or nil: its
// signature must verify (its sender holds the key) and its key must be
// ECDSA P-256/P-384, Ed25519 or RSA of at least 2048 bits.
func CheckCSR(csr *x509.CertificateRequest) error {
	if csr == nil {
		return errors.New("certificate request: none given")
	}
	if err := csr.CheckSignature(); err != nil {
		return fmt.Errorf("certificate request: bad signature: %w", err)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("certificate request: ECDSA curve %s: want P-256 or P-384", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("certificate request: RSA key of %d bits: want 2048 or more", k.N.BitLen())
		}
	default:
		return fmt.Errorf("certificate request: unsupported key type %T", csr.PublicKey)
	}
	return nil
}

// Sign issues a node certificate for csr's key exactly as IssueCert does:
// it names corral://<the CA's cluster>/<role>/<id> whatever the request
// asks for (only its key is used), with IssueCert's lifetime, key usages
// and hosts (empty means localhost, 127.0.0.1 and ::1). It returns the
// certificate in DER.
func (ca *CA) Sign(csr *x509.CertificateRequest, role Role, id string, hosts []string) ([]byte, error) {
	if err := CheckCSR(csr); err != nil {
		return nil, err
	}
	ident := Identity{Cluster: ca.Cluster, Role: role, ID: id}
	if err := ident.Validate(); err != nil {
		return nil, err
	}
	return signNode(ca.Cert, ca.key, ident, hosts, csr.PublicKey)
}

// signNode signs a node certificate for ident and pub (see IssueCert).
func signNode(caCert *x509.Certificate, caKey crypto.Signer, ident Identity, hosts []string, pub crypto.PublicKey) ([]byte, error) {
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: string(ident.Role) + " " + ident.ID, Organization: []string{"corral"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(NodeValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{ident.URI()},
	}
	if ident.Role == RoleController {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("sign node certificate: %w", err)
	}
	return der, nil
}
