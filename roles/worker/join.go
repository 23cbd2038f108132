package worker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// JoinTLSDir is where, inside its data dir, a worker that joined with a
// token keeps its TLS files (ca.pem, node.pem, node-key.pem).
const JoinTLSDir = "tls"

// joinPatience bounds how long a worker keeps asking controllers that
// could not answer (no leader, rate limited, unreachable) before it gives
// up. A refusal of the token itself ends the join at once.
const joinPatience = 5 * time.Minute

// Backoff between rounds over the controllers.
const (
	joinMinBackoff = 500 * time.Millisecond
	joinMaxBackoff = 5 * time.Second
)

// joinCluster bootstraps a worker's TLS files from its join token and
// returns the TLS dir to load: DataDir/tls. A worker that has joined
// before (node.pem is there) just uses it. Otherwise it makes a key,
// asks the controllers to sign it (transport.Join), checks what comes
// back and writes the directory. The CA key is never needed here.
func joinCluster(cfg *Config) (string, error) {
	dir := filepath.Join(cfg.DataDir, JoinTLSDir)
	log := cfg.Logger.With("component", "worker")
	if _, err := os.Stat(filepath.Join(dir, transport.NodeFile)); err == nil {
		log.Info("this worker joined before: using its certificate; --join-token is not used", "tls_dir", dir)
		return dir, nil
	}
	if _, _, err := metadata.ParseJoinToken(cfg.JoinToken); err != nil {
		return "", fmt.Errorf("--join-token: %w", err)
	}
	trust, err := transport.LoadTrustedCA(cfg.CACert)
	if err != nil {
		return "", fmt.Errorf("--ca-cert: %w", err)
	}
	caPEM, err := os.ReadFile(cfg.CACert)
	if err != nil {
		return "", fmt.Errorf("--ca-cert: %w", err)
	}
	id, err := resolveWorkerID(cfg.DataDir, cfg.ID)
	if err != nil {
		return "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generate worker key: %w", err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader,
		&x509.CertificateRequest{Subject: pkix.Name{CommonName: "worker " + id, Organization: []string{"corral"}}}, key)
	if err != nil {
		return "", fmt.Errorf("make certificate request: %w", err)
	}
	ctx := cfg.JoinContext
	if ctx == nil {
		ctx = context.Background()
	}
	der, err := askToJoin(ctx, cfg.Controllers, trust, transport.JoinRequest{Token: cfg.JoinToken, Worker: id, CSR: csr}, log)
	if err != nil {
		return "", err
	}
	cert, err := checkJoinedCert(der, trust, key, id)
	if err != nil {
		return "", err
	}
	if err := transport.WriteNodeFiles(dir, caPEM, key, der); err != nil {
		return "", err
	}
	cfg.ID = id
	log.Info("joined the cluster with a token: certificate written", "tls_dir", dir, "worker", id,
		"serial", transport.SerialHex(cert), "not_after", cert.NotAfter.UTC().Format(time.RFC3339))
	return dir, nil
}

// askToJoin asks each controller in turn, in rounds, until one signs or
// refuses the token. Controllers that cannot answer now are asked again
// after a backoff, for up to joinPatience; if none of them could ever
// sign (no --ca-dir, or not a controller of the CA's cluster), it stops.
func askToJoin(ctx context.Context, controllers []string, trust *transport.TLSBundle, req transport.JoinRequest,
	log *slog.Logger) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, joinPatience)
	defer cancel()
	backoff := joinMinBackoff
	for {
		var errs []error
		hopeless := 0
		for _, addr := range controllers {
			der, err := transport.Join(ctx, addr, trust, req)
			if err == nil {
				return der, nil
			}
			var je *transport.JoinError
			if errors.As(err, &je) && !je.Retryable() {
				return nil, fmt.Errorf("join refused by controller %s: %w", addr, err)
			}
			if errors.As(err, &je) && je.Code == transport.JoinNoCA || untrusted(err) {
				hopeless++
			}
			errs = append(errs, fmt.Errorf("controller %s: %w", addr, err))
			log.Warn("join attempt failed", "controller", addr, "err", err)
			if ctx.Err() != nil {
				break
			}
		}
		if hopeless == len(controllers) {
			return nil, fmt.Errorf("no controller can admit this worker: %w", errors.Join(errs...))
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("join: no controller answered (%v): %w", context.Cause(ctx), errors.Join(errs...))
		case <-t.C:
		}
		backoff = min(2*backoff, joinMaxBackoff)
	}
}

// untrusted reports whether err is the worker's refusal of the
// controller's certificate: asking it again will not help.
func untrusted(err error) bool {
	for _, e := range []error{transport.ErrUntrustedCert, transport.ErrForeignCluster, transport.ErrRoleNotAllowed,
		transport.ErrNoPeerIdentity} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// checkJoinedCert checks that the certificate the controller signed is
// this worker's: it names worker id of the CA's cluster, holds key's
// public half and chains to the CA for client authentication.
func checkJoinedCert(der []byte, trust *transport.TLSBundle, key *ecdsa.PrivateKey, id string) (*x509.Certificate, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("join: the controller's certificate: %w", err)
	}
	want := transport.Identity{Cluster: trust.Self.Cluster, Role: transport.RoleWorker, ID: id}
	if got, err := transport.IdentityOf(cert); err != nil || got != want {
		return nil, fmt.Errorf("join: the controller signed a certificate for %v (%v), not %s", got, err, want)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("join: the controller signed a certificate for another key")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: trust.CA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("join: the controller's certificate does not chain to --ca-cert: %w", err)
	}
	return cert, nil
}
