package transport

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

func sampleJoinFrames(t testing.TB) [][]byte {
	var out [][]byte
	for _, req := range []JoinRequest{
		{Token: "corral-join-0123456789abcdef." + strings.Repeat("ab", 32), Worker: "w-1", CSR: []byte{0x30, 0x82, 0x01}},
		{},
	} {
		b, err := EncodeJoinRequest(req)
		require.NoError(t, err)
		out = append(out, b)
	}
	for _, a := range []JoinAnswer{
		{Cert: []byte{0x30, 0x01, 0x02}},
		Refuse(JoinTokenExpired, "join token expired at 2030-01-01T00:00:00Z"),
		{Code: JoinNoCA},
	} {
		b, err := EncodeJoinAnswer(a)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

func TestJoinMessagesRoundTrip(t *testing.T) {
	t.Parallel()
	req := JoinRequest{Token: "tok", Worker: "w-1", CSR: []byte{1, 2, 3}}
	b, err := EncodeJoinRequest(req)
	require.NoError(t, err)
	p, err := readJoinFrame(bytes.NewReader(b))
	require.NoError(t, err)
	got, err := DecodeJoinRequest(p)
	require.NoError(t, err)
	require.Equal(t, req, got)

	for _, a := range []JoinAnswer{{Cert: []byte{9, 8, 7}}, Refuse(JoinTokenUsedUp, "used up")} {
		b, err := EncodeJoinAnswer(a)
		require.NoError(t, err)
		p, err := readJoinFrame(bytes.NewReader(b))
		require.NoError(t, err)
		got, err := DecodeJoinAnswer(p)
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
	long, err := EncodeJoinAnswer(Refuse(JoinInternal, "%s", strings.Repeat("x", 5000)))
	require.NoError(t, err)
	a, err := DecodeJoinAnswer(long[4:])
	require.NoError(t, err)
	require.Len(t, a.Message, maxJoinMessage, "a long message is cut, not refused")

	_, err = EncodeJoinRequest(JoinRequest{CSR: make([]byte, maxJoinDER+1)})
	require.Error(t, err)
	_, err = EncodeJoinAnswer(JoinAnswer{})
	require.Error(t, err, "an answer is a certificate or a refusal")
	_, err = readJoinFrame(bytes.NewReader([]byte{0, 1, 0, 0}))
	require.ErrorIs(t, err, errFrameTooLarge)

	for name, p := range map[string][]byte{
		"empty":       {},
		"bad magic":   []byte("CRXX\x01\x01"),
		"bad version": []byte("CRJN\x02\x01"),
		"answer type": append([]byte("CRJN\x01\x02"), 1, 1),
		"truncated":   []byte("CRJN\x01\x01\x05ab"),
		"trailing":    []byte("CRJN\x01\x01\x00\x00\x00\x00"),
		"long token":  append([]byte("CRJN\x01\x01\xff\x03"), make([]byte, 511)...),
	} {
		_, err := DecodeJoinRequest(p)
		require.ErrorIs(t, err, ErrBadJoinMessage, name)
	}
	for name, p := range map[string][]byte{
		"request type":  []byte("CRJN\x01\x01\x00\x00\x00"),
		"unknown type":  []byte("CRJN\x01\x09"),
		"empty cert":    []byte("CRJN\x01\x02\x00"),
		"code zero":     []byte("CRJN\x01\x03\x00\x00"),
		"code too big":  []byte("CRJN\x01\x03\x80\x02\x00"),
		"non-minimal":   []byte("CRJN\x01\x03\x81\x00\x00"),
		"varint cut":    []byte("CRJN\x01\x03\x81"),
		"missing field": []byte("CRJN\x01\x03\x02"),
	} {
		_, err := DecodeJoinAnswer(p)
		require.ErrorIs(t, err, ErrBadJoinMessage, name)
	}
}

func FuzzDecodeJoinRequest(f *testing.F) {
	for _, b := range sampleJoinFrames(f) {
		f.Add(b[4:])
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		req, err := DecodeJoinRequest(p)
		if err != nil {
			return
		}
		b, err := EncodeJoinRequest(req)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", req, err)
		}
		if !bytes.Equal(b[4:], p) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", p, b[4:])
		}
	})
}

func FuzzDecodeJoinAnswer(f *testing.F) {
	for _, b := range sampleJoinFrames(f) {
		f.Add(b[4:])
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		a, err := DecodeJoinAnswer(p)
		if err != nil {
			return
		}
		b, err := EncodeJoinAnswer(a)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", a, err)
		}
		if !bytes.Equal(b[4:], p) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", p, b[4:])
		}
	})
}

// newCSR makes a key and a certificate request for it.
func newCSR(t *testing.T) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "asks for anything"}}, key)
	require.NoError(t, err)
	return key, der
}

func parseCSR(t *testing.T, der []byte) *x509.CertificateRequest {
	t.Helper()
	csr, err := x509.ParseCertificateRequest(der)
	require.NoError(t, err)
	return csr
}

func TestCASignIssuesLikeIssueCert(t *testing.T) {
	t.Parallel()
	caDir := t.TempDir()
	require.NoError(t, CreateCA(caDir, "prod"))
	ca, err := LoadCA(caDir)
	require.NoError(t, err)
	require.Equal(t, "prod", ca.Cluster)

	key, der := newCSR(t)
	certDER, err := ca.Sign(parseCSR(t, der), RoleWorker, "w-7", nil)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(certDER)
	require.NoError(t, err)
	id, err := IdentityOf(cert)
	require.NoError(t, err)
	require.Equal(t, Identity{Cluster: "prod", Role: RoleWorker, ID: "w-7"}, id, "the CSR's own subject is ignored")
	require.True(t, key.PublicKey.Equal(cert.PublicKey))

	// The same template as IssueCert's.
	dir := t.TempDir()
	_, err = IssueCert(caDir, RoleWorker, "w-8", nil, dir)
	require.NoError(t, err)
	issued := loadBundle(t, dir).Leaf()
	require.Equal(t, issued.ExtKeyUsage, cert.ExtKeyUsage)
	require.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)
	require.Equal(t, issued.KeyUsage, cert.KeyUsage)
	require.Equal(t, issued.DNSNames, cert.DNSNames)
	require.Equal(t, len(issued.IPAddresses), len(cert.IPAddresses))
	require.InDelta(t, issued.NotAfter.Sub(issued.NotBefore), cert.NotAfter.Sub(cert.NotBefore), float64(time.Second))
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)

	// Refusals.
	_, err = ca.Sign(parseCSR(t, der), RoleWorker, "bad id!", nil)
	require.Error(t, err)
	bad := parseCSR(t, der)
	bad.Signature[len(bad.Signature)-1] ^= 1
	_, err = ca.Sign(bad, RoleWorker, "w-7", nil)
	require.ErrorContains(t, err, "bad signature")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	small, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, rsaKey)
	require.NoError(t, err)
	_, err = ca.Sign(parseCSR(t, small), RoleWorker, "w-7", nil)
	require.ErrorContains(t, err, "RSA key of 1024 bits")
	require.Error(t, CheckCSR(nil))

	_, err = LoadCA(t.TempDir())
	require.ErrorContains(t, err, "read CA certificate")
}

func TestLoadTrustedCA(t *testing.T) {
	t.Parallel()
	caDir := t.TempDir()
	require.NoError(t, CreateCA(caDir, "prod"))
	b, err := LoadTrustedCA(filepath.Join(caDir, CAFile))
	require.NoError(t, err)
	require.Equal(t, Identity{Cluster: "prod"}, b.Self)
	require.Nil(t, b.Leaf(), "no certificate of its own")

	other := t.TempDir()
	require.NoError(t, CreateCA(other, "staging"))
	both := filepath.Join(t.TempDir(), "both.pem")
	a, err := os.ReadFile(filepath.Join(caDir, CAFile))
	require.NoError(t, err)
	c, err := os.ReadFile(filepath.Join(other, CAFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(both, append(a, c...), 0o644))
	_, err = LoadTrustedCA(both)
	require.ErrorContains(t, err, `names clusters "prod" and "staging"`)

	_, err = LoadTrustedCA(filepath.Join(t.TempDir(), "none.pem"))
	require.ErrorContains(t, err, "read CA certificate")
	empty := filepath.Join(t.TempDir(), "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("not pem"), 0o644))
	_, err = LoadTrustedCA(empty)
	require.ErrorContains(t, err, "no PEM certificate")
	// A node certificate is not a CA.
	node := t.TempDir()
	_, err = IssueCert(caDir, RoleWorker, "w-1", nil, node)
	require.NoError(t, err)
	_, err = LoadTrustedCA(filepath.Join(node, NodeFile))
	require.ErrorContains(t, err, "is not a CA")
}

// joinNode is a controller's transport that signs join requests with its
// CA, recording what its handler saw.
type joinNode struct {
	*testNode
	caDir string
	mu    sync.Mutex
	seen  []JoinRequest
}

func startJoinNode(t *testing.T) *joinNode {
	t.Helper()
	caDir := t.TempDir()
	require.NoError(t, CreateCA(caDir, "prod"))
	n := &joinNode{testNode: startNode(t, 1, issueBundle(t, caDir, RoleController, "1"), "", ""), caDir: caDir}
	ca, err := LoadCA(caDir)
	require.NoError(t, err)
	n.q.HandleJoin(func(_ context.Context, _ net.Addr, req JoinRequest) JoinAnswer {
		n.mu.Lock()
		n.seen = append(n.seen, req)
		n.mu.Unlock()
		if req.Token != "good" {
			return Refuse(JoinTokenUnknown, "unknown join token")
		}
		csr, err := x509.ParseCertificateRequest(req.CSR)
		if err != nil {
			return Refuse(JoinBadRequest, "bad CSR: %v", err)
		}
		der, err := ca.Sign(csr, RoleWorker, req.Worker, nil)
		if err != nil {
			return Refuse(JoinBadRequest, "%v", err)
		}
		return JoinAnswer{Cert: der}
	})
	return n
}

func (n *joinNode) requests() []JoinRequest {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]JoinRequest(nil), n.seen...)
}

func TestJoinOverQUIC(t *testing.T) {
	t.Parallel()
	n := startJoinNode(t)
	trust, err := LoadTrustedCA(filepath.Join(n.caDir, CAFile))
	require.NoError(t, err)
	ctx := context.Background()
	key, csr := newCSR(t)
	der, err := Join(ctx, n.q.Addr().String(), trust, JoinRequest{Token: "good", Worker: "w-1", CSR: csr})
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	id, err := IdentityOf(cert)
	require.NoError(t, err)
	require.Equal(t, Identity{Cluster: "prod", Role: RoleWorker, ID: "w-1"}, id)

	// The certificate works: a worker session with it reaches the worker listener.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, CAFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: trustCA(t, n.caDir).Raw}), 0o644))
	require.NoError(t, writeKey(filepath.Join(dir, NodeKeyFile), key))
	require.NoError(t, writePEM(filepath.Join(dir, NodeFile), "CERTIFICATE", der, 0o644))
	wb := loadBundle(t, dir)
	l, err := n.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	d, err := NewQUICDialer(QUICDialerConfig{TLS: wb, ALPN: ALPNWorker})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	dctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	s, err := d.DialStream(dctx, n.q.Addr().String())
	require.NoError(t, err)
	_, err = s.Write([]byte("x"))
	require.NoError(t, err)
	srv, err := l.Accept(dctx)
	require.NoError(t, err)
	peer, ok := srv.Peer()
	require.True(t, ok)
	require.Equal(t, id, peer)

	// A refusal comes back as a *JoinError with the handler's words.
	_, err = Join(ctx, n.q.Addr().String(), trust, JoinRequest{Token: "bad", Worker: "w-2", CSR: csr})
	var je *JoinError
	require.ErrorAs(t, err, &je)
	require.Equal(t, JoinTokenUnknown, je.Code)
	require.Equal(t, "unknown join token", je.Error())
	require.False(t, je.Retryable())
}

func trustCA(t *testing.T, caDir string) *x509.Certificate {
	t.Helper()
	ca, err := LoadCA(caDir)
	require.NoError(t, err)
	return ca.Cert
}

// The joining worker checks the controller: one of another cluster's CA is
// refused before anything is sent.
func TestJoinRefusesUntrustedController(t *testing.T) {
	t.Parallel()
	n := startJoinNode(t)
	otherCA := t.TempDir()
	require.NoError(t, CreateCA(otherCA, "prod")) // same name, another key
	trust, err := LoadTrustedCA(filepath.Join(otherCA, CAFile))
	require.NoError(t, err)
	_, csr := newCSR(t)
	_, err = Join(context.Background(), n.q.Addr().String(), trust, JoinRequest{Token: "good", Worker: "w-1", CSR: csr})
	require.ErrorIs(t, err, ErrUntrustedCert)
	require.Empty(t, n.requests(), "the request was sent to an untrusted server")

	// A CA of another cluster name signing the same key is refused too.
	named, err := LoadTrustedCA(filepath.Join(n.caDir, CAFile))
	require.NoError(t, err)
	named.Self.Cluster = "staging"
	_, err = Join(context.Background(), n.q.Addr().String(), named, JoinRequest{Token: "good", Worker: "w-1", CSR: csr})
	require.ErrorIs(t, err, ErrForeignCluster)
}

// noCertTLS is a client that presents no certificate and accepts any
// server: someone without a node certificate trying its luck.
func noCertTLS(alpn ...string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: alpn, InsecureSkipVerify: true}
}

// A connection that negotiated the join protocol (no client certificate)
// reaches the join handler only: not raft, not the worker listener.
func TestJoinConnectionReachesOnlyTheJoinHandler(t *testing.T) {
	t.Parallel()
	n := startJoinNode(t)
	l, err := n.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	addr := n.q.Addr().String()

	conn := dialRaw(t, addr, noCertTLS(ALPNJoin))
	require.Equal(t, ALPNJoin, conn.ConnectionState().TLS.NegotiatedProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	// Raft messages go on unidirectional streams: nobody reads one here.
	writeRaftStream(t, conn, streamHeader{kind: streamKindMessages, from: 2}, msg(raftpb.MsgHeartbeat, 2, 1, 1))
	// A worker session's preamble on the bidirectional stream is a bad
	// join request to the join handler.
	s, err := conn.OpenStreamSync(ctx)
	require.NoError(t, err)
	require.NoError(t, s.SetDeadline(time.Now().Add(waitFor)))
	frame := append([]byte{0, 0, 0, 5}, WorkerPreamble()...)
	_, err = s.Write(frame)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	p, err := readJoinFrame(s)
	require.NoError(t, err)
	ans, err := DecodeJoinAnswer(p)
	require.NoError(t, err)
	require.Equal(t, JoinBadRequest, ans.Code)
	require.Contains(t, ans.Message, "bad join request")
	require.Empty(t, n.h.received(), "a join connection reached raft")
	actx, acancel := context.WithCancel(ctx)
	acancel()
	_, err = l.Accept(actx)
	require.ErrorIs(t, err, context.Canceled, "a join connection reached the worker listener")

	// Without a certificate no other protocol is served, whatever else is
	// offered beside the join protocol.
	for _, alpn := range [][]string{{ALPNRaft}, {ALPNWorker}, {ALPNPeerHTTP}, {ALPNJoin, ALPNRaft}, {ALPNWorker, ALPNJoin}} {
		err := dialRefused(t, addr, noCertTLS(alpn...))
		requireRefusedAtHandshake(t, err)
	}
	require.Empty(t, n.h.received())

	// With a certificate, the join protocol is not on offer: it is only
	// ever negotiated without client authentication.
	ctrl := issueBundle(t, n.caDir, RoleController, "2")
	conn2 := dialRaw(t, addr, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{ctrl.Cert},
		NextProtos: []string{ALPNWorker, ALPNJoin}, InsecureSkipVerify: true})
	require.Equal(t, ALPNWorker, conn2.ConnectionState().TLS.NegotiatedProtocol)
}

// A controller that serves no join protocol (no HandleJoin) offers it to
// nobody.
func TestJoinNotServedWithoutHandler(t *testing.T) {
	t.Parallel()
	b := controllerBundles(t, 1)[0]
	n := startNode(t, 1, b, "", "")
	requireRefusedAtHandshake(t, dialRefused(t, n.q.Addr().String(), noCertTLS(ALPNJoin)))
	// And it cannot be registered as an ordinary stream protocol.
	n.q.HandleALPN(ALPNJoin, func(c *quic.Conn) { _ = c.CloseWithError(0, "") })
	requireRefusedAtHandshake(t, dialRefused(t, n.q.Addr().String(), noCertTLS(ALPNJoin)))
}

func TestJoinCodes(t *testing.T) {
	t.Parallel()
	codes := JoinCodes()
	require.Len(t, codes, 11)
	seen := map[string]bool{}
	for _, c := range codes {
		require.NotContains(t, c.String(), "code_")
		require.False(t, seen[c.String()])
		seen[c.String()] = true
	}
	require.Equal(t, "code_200", JoinCode(200).String())
	require.True(t, (&JoinError{Code: JoinRateLimited}).Retryable())
	require.True(t, (&JoinError{Code: JoinNoCA}).Retryable())
	require.False(t, (&JoinError{Code: JoinTokenExpired}).Retryable())
	require.False(t, errors.Is(&JoinError{}, ErrUntrustedCert))
}
