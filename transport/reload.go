package transport

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// reloadCheckInterval bounds how often a KeyPairReloader looks at its
// files: a handshake costs at most two stats a second, however many arrive.
const reloadCheckInterval = time.Second

// KeyPairReloader serves a certificate and key from files and picks up
// replaced files without a restart (certificate rotation): the next
// handshake after the files change uses the new pair. A pair that fails to
// load is logged and the previous one kept, so a half-copied rotation never
// takes the server down.
type KeyPairReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	certMod   time.Time
	keyMod    time.Time
	checkedAt time.Time
}

// NewKeyPairReloader loads the pair once; errors name the file.
func NewKeyPairReloader(certFile, keyFile string, log *slog.Logger) (*KeyPairReloader, error) {
	if log == nil {
		log = slog.Default()
	}
	r := &KeyPairReloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	certMod, keyMod, err := r.mtimes()
	if err != nil {
		return nil, err
	}
	cert, err := loadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.cert, r.certMod, r.keyMod, r.checkedAt = cert, certMod, keyMod, r.now()
	return r, nil
}

func loadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load key pair %s + %s: %w", certFile, keyFile, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parse certificate %s: %w", certFile, err)
	}
	cert.Leaf = leaf
	return &cert, nil
}

func (r *KeyPairReloader) mtimes() (certMod, keyMod time.Time, err error) {
	ci, err := os.Stat(r.certFile)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("certificate %s: %w", r.certFile, err)
	}
	ki, err := os.Stat(r.keyFile)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("key %s: %w", r.keyFile, err)
	}
	return ci.ModTime(), ki.ModTime(), nil
}

// Certificate returns the current pair, reloading it first if the files
// changed since the last look.
func (r *KeyPairReloader) Certificate() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.checkedAt) < reloadCheckInterval {
		return r.cert
	}
	r.checkedAt = now
	certMod, keyMod, err := r.mtimes()
	if err != nil || (certMod.Equal(r.certMod) && keyMod.Equal(r.keyMod)) {
		return r.cert
	}
	cert, err := loadKeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn("keeping the previous certificate: the new files do not load", "err", err)
		return r.cert
	}
	r.cert, r.certMod, r.keyMod = cert, certMod, keyMod
	r.log.Info("certificate reloaded", "file", r.certFile, "serial", SerialHex(cert.Leaf),
		"not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return r.cert
}

// Leaf returns the current certificate, reloading it first if the files
// changed (as Certificate does): for RegisterCertExpiry(reg, "http", r.Leaf).
func (r *KeyPairReloader) Leaf() *x509.Certificate { return r.Certificate().Leaf }

// GetCertificate is for tls.Config.GetCertificate.
func (r *KeyPairReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Certificate(), nil
}

// ServerTLS is a TLS server config that serves the reloader's pair: TLS 1.2
// or newer (browsers and Prometheus), HTTP/1.1 only (the API's full-duplex
// streams need it).
func (r *KeyPairReloader) ServerTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate, NextProtos: []string{"http/1.1"}}
}
