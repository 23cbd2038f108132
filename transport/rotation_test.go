package transport

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// issueInto issues a certificate for role and id with the CA in caDir and
// copies only its node.pem and node-key.pem into dir (dir's ca.pem stays),
// as an operator rotating a node's pair does. It returns the new serial.
func issueInto(t *testing.T, caDir string, role Role, id, dir string) *big.Int {
	t.Helper()
	tmp := t.TempDir()
	_, err := IssueCert(caDir, role, id, []string{"127.0.0.1"}, tmp)
	require.NoError(t, err)
	for _, f := range []string{NodeKeyFile, NodeFile} {
		b, err := os.ReadFile(filepath.Join(tmp, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	return loadBundle(t, tmp).Cert.Leaf.SerialNumber
}

// servedSerial opens a new connection to addr as client and returns the
// serial of the certificate the server presented.
func servedSerial(t *testing.T, addr string, client *TLSBundle) *big.Int {
	t.Helper()
	conn := dialRaw(t, addr, client.ClientConfig(ALPNRaft))
	defer conn.CloseWithError(0, "")
	return conn.ConnectionState().TLS.PeerCertificates[0].SerialNumber
}

// acceptedSerials returns the serials of the client certificates on the
// connections n has accepted.
func acceptedSerials(n *testNode) []string {
	n.q.mu.RLock()
	defer n.q.mu.RUnlock()
	var out []string
	for c := range n.q.conns {
		if pc := c.ConnectionState().TLS.PeerCertificates; len(pc) > 0 {
			out = append(out, pc[0].SerialNumber.String())
		}
	}
	return out
}

// A reload makes new handshakes, served and dialed, use the new pair,
// while a connection made before it keeps carrying messages.
func TestTLSReload_NewHandshakesUseTheNewCertificate(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 2)
	a, bBundle := bs[0], bs[1] // a was loaded from caDir, its own TLS dir
	na := startNode(t, 1, a, "", "")
	nb := startNode(t, 2, bBundle, "", "")
	addr := na.q.Addr().String()
	first := a.Cert.Leaf.SerialNumber
	require.Equal(t, first, servedSerial(t, addr, bBundle))

	old := dialRaw(t, addr, bBundle.ClientConfig(ALPNRaft))
	writeRaftStream(t, old, streamHeader{kind: streamKindMessages, from: 2}, msg(raftpb.MsgHeartbeat, 2, 1, 0))
	require.Eventually(t, func() bool { return na.h.countFrom(2) == 1 }, waitFor, 10*time.Millisecond)

	second := issueInto(t, caDir, RoleController, "1", caDir)
	require.NoError(t, a.Reload())
	require.Equal(t, second, a.Leaf().SerialNumber)
	require.Equal(t, first, a.Cert.Leaf.SerialNumber, "the field keeps what the bundle was made with")

	// New handshakes, as server and as client, present the new certificate.
	require.Equal(t, second, servedSerial(t, addr, bBundle))
	na.q.AddPeer(2, nb.q.Addr().String())
	na.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 0)})
	require.Eventually(t, func() bool { return nb.h.countFrom(1) == 1 }, waitFor, 10*time.Millisecond)
	require.Contains(t, acceptedSerials(nb), second.String())

	// The connection made before the reload is still up and still heard.
	require.NoError(t, old.Context().Err())
	writeRaftStream(t, old, streamHeader{kind: streamKindMessages, from: 2}, msg(raftpb.MsgHeartbeat, 2, 1, 1))
	require.Eventually(t, func() bool { return na.h.countFrom(2) == 2 }, waitFor, 10*time.Millisecond)
	require.Equal(t, first, old.ConnectionState().TLS.PeerCertificates[0].SerialNumber)
	requireRejections(t, na.reg, nil)
}

// A reload that would change the node's identity, or whose certificate
// does not chain to ca.pem, or whose files do not load, is refused and the
// node keeps serving its current certificate.
func TestTLSReload_RefusesBadFilesAndKeepsTheOld(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 2)
	a := bs[0]
	na := startNode(t, 1, a, "", "")
	addr := na.q.Addr().String()
	current := a.Leaf().SerialNumber
	nodePEM, keyPEM := filepath.Join(caDir, NodeFile), filepath.Join(caDir, NodeKeyFile)
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return b
	}
	goodCert, goodKey := read(nodePEM), read(keyPEM)

	// Another CA, even one naming the same cluster.
	otherCA := t.TempDir()
	require.NoError(t, CreateCA(otherCA, a.Self.Cluster))

	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T)
		want    string
		is      error
	}{
		{
			name:    "another controller",
			prepare: func(t *testing.T) { issueInto(t, caDir, RoleController, "2", caDir) },
			want:    "but this node runs as " + a.Self.String(),
		},
		{
			name:    "a worker",
			prepare: func(t *testing.T) { issueInto(t, caDir, RoleWorker, "w-1", caDir) },
			want:    "a node's identity cannot change while it runs",
		},
		{
			name:    "another CA",
			prepare: func(t *testing.T) { issueInto(t, otherCA, RoleController, "1", caDir) },
			want:    "does not match CA",
			is:      ErrUntrustedCert,
		},
		{
			name:    "a garbled key",
			prepare: func(t *testing.T) { require.NoError(t, os.WriteFile(keyPEM, []byte("garbage"), 0o600)) },
			want:    "load node key pair",
		},
		{
			name:    "a missing certificate",
			prepare: func(t *testing.T) { require.NoError(t, os.Remove(nodePEM)) },
			want:    "read node TLS file " + nodePEM,
		},
		{
			name: "a certificate without its key",
			prepare: func(t *testing.T) {
				tmp := t.TempDir()
				_, err := IssueCert(caDir, RoleController, "1", nil, tmp)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(nodePEM, read(filepath.Join(tmp, NodeFile)), 0o600))
			},
			want: "private key does not match public key",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.prepare(t)
			err := a.Reload()
			require.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			require.Equal(t, current, a.Leaf().SerialNumber)
			require.Equal(t, current, servedSerial(t, addr, bs[1]))
			// Put the working files back for the next case.
			require.NoError(t, os.WriteFile(nodePEM, goodCert, 0o600))
			require.NoError(t, os.WriteFile(keyPEM, goodKey, 0o600))
		})
	}
	// And with the files back, a reload works.
	require.NoError(t, a.Reload())

	// A bundle that was not loaded from a directory cannot reload.
	made := &TLSBundle{Self: a.Self, CA: a.CA, Cert: a.Cert}
	require.ErrorContains(t, made.Reload(), "not loaded from a TLS directory")
}

// A reloaded ca.pem is the pool new handshakes check peers against: a node
// moving to a new CA lists both, and then trusts peers of either.
func TestTLSReload_NewCAPool(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 2)
	a := bs[0]
	na := startNode(t, 1, a, "", "")
	addr := na.q.Addr().String()

	newCA := t.TempDir()
	require.NoError(t, CreateCA(newCA, a.Self.Cluster))
	fromNew := issueBundle(t, newCA, RoleController, "3")
	oldPEM, err := os.ReadFile(filepath.Join(caDir, CAFile))
	require.NoError(t, err)
	newPEM, err := os.ReadFile(filepath.Join(newCA, CAFile))
	require.NoError(t, err)
	both := append(append([]byte(nil), oldPEM...), newPEM...)
	// The newcomer trusts both CAs, so only the server's check decides.
	require.NoError(t, os.WriteFile(filepath.Join(fromNew.dir, CAFile), both, 0o644))
	require.NoError(t, fromNew.Reload())
	requireRefusedAtHandshake(t, dialRefused(t, addr, fromNew.ClientConfig(ALPNRaft)))
	require.Equal(t, 1.0, rejectedCount(t, na.reg, RejectUntrustedCert))

	// ca.pem lists the old and the new CA; node.pem comes from the new one.
	rotated := issueInto(t, newCA, RoleController, "1", caDir)
	require.NoError(t, os.WriteFile(filepath.Join(caDir, CAFile), both, 0o644))
	require.NoError(t, a.Reload())

	// Both generations are let in; the server presents its new certificate.
	require.Equal(t, rotated, servedSerial(t, addr, fromNew))
	// bs[1] trusts only the old CA, so it would refuse the server (the
	// reason to list both CAs everywhere before issuing from the new
	// one); the server still lets its old-CA certificate in.
	dialRaw(t, addr, attackerTLS(bs[1].Cert, ALPNRaft))
	require.Eventually(t, func() bool {
		return slices.Contains(acceptedSerials(na), bs[1].Leaf().SerialNumber.String())
	}, waitFor, 10*time.Millisecond)
	require.Equal(t, 1.0, rejectedCount(t, na.reg, RejectUntrustedCert))
}

// gaugeValue reads one series of corral_tls_cert_expiry_timestamp_seconds.
func expiryGauge(t *testing.T, reg prometheus.Gatherer, cert string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != CertExpiryMetric {
			continue
		}
		require.Equal(t, "GAUGE", mf.GetType().String())
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cert" && l.GetValue() == cert {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func TestCertExpiryGauge(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 1)
	a := bs[0]
	reg := prometheus.NewRegistry()
	require.NoError(t, RegisterCertExpiry(reg, "node", a.Leaf))
	v, ok := expiryGauge(t, reg, "node")
	require.True(t, ok)
	require.Equal(t, float64(a.Leaf().NotAfter.Unix()), v)

	// A registration for the same certificate name keeps the first (a
	// combined node's worker after its controller).
	other := controllerBundles(t, 5)[0]
	require.NoError(t, RegisterCertExpiry(reg, "node", other.Leaf))
	v, _ = expiryGauge(t, reg, "node")
	require.Equal(t, float64(a.Leaf().NotAfter.Unix()), v)

	// After a reload the gauge shows the new certificate's expiry (this
	// one expires in an hour, IssueCert's in two years).
	short := signLeaf(t, caDir, []string{a.Self.String()},
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, a.Self)
	dir := writeBundleDir(t, caDir, short)
	for _, f := range []string{NodeFile, NodeKeyFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(caDir, f), b, 0o600))
	}
	require.NoError(t, a.Reload())
	v, _ = expiryGauge(t, reg, "node")
	require.Equal(t, float64(short.Cert.Leaf.NotAfter.Unix()), v)
	require.Less(t, v, float64(time.Now().Add(2*time.Hour).Unix()))

	// The HTTPS pair, from its reloader.
	kp, err := NewKeyPairReloader(filepath.Join(caDir, NodeFile), filepath.Join(caDir, NodeKeyFile),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.NoError(t, RegisterCertExpiry(reg, "http", kp.Leaf))
	v, ok = expiryGauge(t, reg, "http")
	require.True(t, ok)
	require.Equal(t, float64(short.Cert.Leaf.NotAfter.Unix()), v)

	require.NoError(t, RegisterCertExpiry(nil, "node", a.Leaf), "no registry: nothing to do")
}

// denySet is a Denied hook refusing the serials it holds.
type denySet struct {
	mu      sync.Mutex
	serials map[string]bool
	asked   int
}

func newDenySet() *denySet { return &denySet{serials: map[string]bool{}} }

func (d *denySet) add(b *TLSBundle) {
	d.mu.Lock()
	d.serials[b.Leaf().SerialNumber.String()] = true
	d.mu.Unlock()
}

func (d *denySet) denied(cert *x509.Certificate, id Identity) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked++
	if d.serials[cert.SerialNumber.String()] {
		return fmt.Errorf("%w: %s is on the deny-list", ErrRevoked, id)
	}
	return nil
}

func (d *denySet) askedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asked
}

// withDenied is a copy of b (sharing its TLS directory) with a Denied hook.
func withDenied(t *testing.T, b *TLSBundle, d func(*x509.Certificate, Identity) error) *TLSBundle {
	t.Helper()
	nb := loadBundle(t, b.dir)
	nb.Denied = d
	return nb
}

// Denied refuses a certificate at the handshake, on every verify path,
// counted as revoked; other certificates are unaffected.
func TestDenied_RefusesAtTheHandshake(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 3)
	deny := newDenySet()
	a := withDenied(t, bs[0], deny.denied)
	na := startNode(t, 1, a, "", "")
	nb := startNode(t, 2, bs[1], "", "")
	pl, err := nb.q.ListenStreams(ALPNPeerHTTP)
	require.NoError(t, err)
	t.Cleanup(func() { pl.Close() })
	addr := na.q.Addr().String()
	worker := issueBundle(t, caDir, RoleWorker, "w-1")
	wl, err := na.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { wl.Close() })
	echoServe(t, wl)

	// Nothing denied yet: everyone gets in, and the hook was asked.
	dialRaw(t, addr, bs[1].ClientConfig(ALPNRaft))
	require.Eventually(t, func() bool { return deny.askedCount() > 0 }, waitFor, 10*time.Millisecond)

	deny.add(bs[1])
	deny.add(worker)
	// As a server, for raft and for the worker protocol.
	requireRefusedAtHandshake(t, dialRefused(t, addr, bs[1].ClientConfig(ALPNRaft)))
	require.Equal(t, 1.0, rejectedCount(t, na.reg, RejectRevoked))
	requireRefusedAtHandshake(t, dialRefused(t, addr, worker.ClientConfig(ALPNWorker)))
	require.Equal(t, 2.0, rejectedCount(t, na.reg, RejectRevoked))
	// Others still get in.
	dialRaw(t, addr, bs[2].ClientConfig(ALPNRaft))

	// As a client: the peer API dialer and the raft peer dialer refuse a
	// server whose certificate is denied.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err = na.q.DialPeerHTTP(ctx, 2, nb.q.Addr().String())
	require.Error(t, err)
	require.Equal(t, 3.0, rejectedCount(t, na.reg, RejectRevoked))
	na.q.AddPeer(2, nb.q.Addr().String())
	na.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 0)})
	require.Eventually(t, func() bool { return rejectedCount(t, na.reg, RejectRevoked) >= 4 }, waitFor, 10*time.Millisecond)
	require.Zero(t, nb.h.countFrom(1))
	require.False(t, na.q.PeerStatus(2).Connected)

	// A worker's dialer with a Denied hook refuses a denied controller
	// (as a client, before presenting its own certificate).
	wdeny := newDenySet()
	wdeny.add(bs[0])
	worker2 := issueBundle(t, caDir, RoleWorker, "w-2")
	dialWorkerStream(t, worker2, addr) // not denied by the server
	d, err := NewQUICDialer(QUICDialerConfig{TLS: withDenied(t, worker2, wdeny.denied), ALPN: ALPNWorker, LocalAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	_, err = d.DialStream(ctx, addr)
	require.Error(t, err)
	require.Positive(t, wdeny.askedCount())

	requireRejections(t, na.reg, nil) // only revoked, checked above
}

func TestRejectReason_Revoked(t *testing.T) {
	t.Parallel()
	require.Equal(t, RejectRevoked, rejectReason(fmt.Errorf("x: %w", ErrRevoked)))
	// A Denied error that forgot ErrRevoked is still counted as revoked.
	b := clusterBundles(t, 1)[0]
	b.Denied = func(*x509.Certificate, Identity) error { return errors.New("no") }
	err := b.checkDenied(b.Leaf(), b.Self)
	require.ErrorIs(t, err, ErrRevoked)
	require.ErrorContains(t, err, "serial "+SerialHex(b.Leaf()))
	require.Equal(t, RejectRevoked, rejectReason(err))
}

// requireClosedAsRevoked waits for the server to close conn as revoked.
func requireClosedAsRevoked(t *testing.T, conn *quic.Conn) {
	t.Helper()
	err := closeCause(t, conn)
	var ae *quic.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.True(t, ae.Remote, "%v", err)
	require.Equal(t, errCodeRevoked, ae.ErrorCode, "%v", err)
}

// CloseDenied ends the established connections of certificates denied
// since, accepted (raft, worker streams) and dialed, and only those.
func TestCloseDenied_ClosesConnectionsOfNowDeniedCertificates(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 4)
	deny := newDenySet()
	a := withDenied(t, bs[0], deny.denied)
	na := startNode(t, 1, a, "", "")
	n4 := startNode(t, 4, bs[3], "", "")
	addr := na.q.Addr().String()
	wl, err := na.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { wl.Close() })
	echoServe(t, wl)
	bad, good := issueBundle(t, caDir, RoleWorker, "w-bad"), issueBundle(t, caDir, RoleWorker, "w-good")

	// Accepted: raft from controllers 2 and 3, worker streams from two workers.
	c2 := dialRaw(t, addr, bs[1].ClientConfig(ALPNRaft))
	c3 := dialRaw(t, addr, bs[2].ClientConfig(ALPNRaft))
	writeRaftStream(t, c2, streamHeader{kind: streamKindMessages, from: 2}, msg(raftpb.MsgHeartbeat, 2, 1, 0))
	writeRaftStream(t, c3, streamHeader{kind: streamKindMessages, from: 3}, msg(raftpb.MsgHeartbeat, 3, 1, 0))
	require.Eventually(t, func() bool { return na.h.countFrom(2) == 1 && na.h.countFrom(3) == 1 }, waitFor, 10*time.Millisecond)
	sBad, sGood := dialWorkerStream(t, bad, addr), dialWorkerStream(t, good, addr)
	for _, s := range []Stream{sBad, sGood} {
		_, err := s.Write([]byte("ping"))
		require.NoError(t, err)
		got, err := readWithin(t, s, 4, waitFor)
		require.NoError(t, err)
		require.Equal(t, "ping", string(got))
	}
	// Dialed: the raft peer connection to controller 4.
	na.q.AddPeer(4, n4.q.Addr().String())
	na.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 4, 0)})
	require.Eventually(t, func() bool { return n4.h.countFrom(1) == 1 }, waitFor, 10*time.Millisecond)
	require.Eventually(t, func() bool { return len(acceptedConns(n4)) == 1 }, waitFor, 10*time.Millisecond)
	to4 := acceptedConns(n4)[0]

	na.q.CloseDenied() // nothing denied: nothing closed
	require.Zero(t, rejectedCount(t, na.reg, RejectRevoked))

	deny.add(bs[1])
	deny.add(bad)
	deny.add(bs[3])
	na.q.CloseDenied()
	requireClosedAsRevoked(t, c2)
	_, err = readWithin(t, sBad, 1, waitFor)
	var ae *quic.ApplicationError
	require.ErrorAs(t, err, &ae, "the denied worker's stream must end")
	require.Equal(t, errCodeRevoked, ae.ErrorCode)
	select {
	case <-to4.Context().Done():
	case <-time.After(waitFor):
		t.Fatal("the connection dialed to the denied controller 4 is still open")
	}
	// Three closed (the raft sender redialing controller 4 since is
	// refused at its handshake, and counted too).
	require.GreaterOrEqual(t, rejectedCount(t, na.reg, RejectRevoked), 3.0)

	// The others are untouched and still work.
	require.NoError(t, c3.Context().Err())
	writeRaftStream(t, c3, streamHeader{kind: streamKindMessages, from: 3}, msg(raftpb.MsgHeartbeat, 3, 1, 1))
	require.Eventually(t, func() bool { return na.h.countFrom(3) == 2 }, waitFor, 10*time.Millisecond)
	_, err = sGood.Write([]byte("pong"))
	require.NoError(t, err)
	got, err := readWithin(t, sGood, 4, waitFor)
	require.NoError(t, err)
	require.Equal(t, "pong", string(got))
}

// acceptedConns lists the connections n has accepted.
func acceptedConns(n *testNode) []*quic.Conn {
	n.q.mu.RLock()
	defer n.q.mu.RUnlock()
	out := make([]*quic.Conn, 0, len(n.q.conns))
	for c := range n.q.conns {
		out = append(out, c)
	}
	return out
}
