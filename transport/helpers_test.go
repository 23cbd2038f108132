package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

const waitFor = 20 * time.Second

// recHandler records everything a transport hands to its Handler.
type recHandler struct {
	mu          sync.Mutex
	msgs        []*raftpb.Message
	unreachable map[uint64]int
	snaps       []snapReport
	failProcess bool
	gone        []uint64
}

// PeerGone records the liveness link's reports (PeerGoneHandler).
func (h *recHandler) PeerGone(id uint64) {
	h.mu.Lock()
	h.gone = append(h.gone, id)
	h.mu.Unlock()
}

func (h *recHandler) goneCount(id uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, g := range h.gone {
		if g == id {
			n++
		}
	}
	return n
}

func newRecHandler() *recHandler { return &recHandler{unreachable: map[uint64]int{}} }

func (h *recHandler) Process(_ context.Context, m *raftpb.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, m)
	if h.failProcess {
		return errors.New("refused by test handler")
	}
	return nil
}

func (h *recHandler) ReportUnreachable(id uint64) {
	h.mu.Lock()
	h.unreachable[id]++
	h.mu.Unlock()
}

func (h *recHandler) ReportSnapshot(id uint64, s raft.SnapshotStatus) {
	h.mu.Lock()
	h.snaps = append(h.snaps, snapReport{id, s})
	h.mu.Unlock()
}

// countFrom counts received messages sent by from.
func (h *recHandler) countFrom(from uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m.GetFrom() == from {
			n++
		}
	}
	return n
}

func (h *recHandler) received() []*raftpb.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*raftpb.Message(nil), h.msgs...)
}

func (h *recHandler) unreachableCount(id uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unreachable[id]
}

func (h *recHandler) snapReports(id uint64, s raft.SnapshotStatus) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.snaps {
		if r.id == id && r.status == s {
			n++
		}
	}
	return n
}

func msg(typ raftpb.MessageType, from, to, index uint64) *raftpb.Message {
	return &raftpb.Message{Type: typ.Enum(), From: new(from), To: new(to), Term: new(uint64(1)), Index: new(index)}
}

func snapMsg(from, to uint64, data []byte) *raftpb.Message {
	m := msg(raftpb.MsgSnap, from, to, 10)
	m.Snapshot = &raftpb.Snapshot{
		Data:     data,
		Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(10)), Term: new(uint64(1)), ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}},
	}
	return m
}

// clusterBundles issues controller certificates for node ids 1..n sharing
// one CA and returns the loaded bundles (bundle i is controller i+1). The
// first comes from the dev shortcut CreateCerts (a CA with a random cluster
// name, in the node's own directory), the others from IssueCert with that
// CA, as production issues them.
func clusterBundles(t *testing.T, n int) []*TLSBundle {
	t.Helper()
	_, bs := clusterWithCA(t, n)
	return bs
}

// clusterWithCA is clusterBundles that also returns the CA's directory, to
// issue more certificates of the same cluster from.
func clusterWithCA(t *testing.T, n int) (caDir string, bundles []*TLSBundle) {
	t.Helper()
	first := t.TempDir()
	require.NoError(t, CreateCerts(first, RoleController, "1", []string{"127.0.0.1", "localhost"}))
	out := make([]*TLSBundle, 0, n)
	for i := range n {
		dir := first
		if i > 0 {
			dir = t.TempDir()
			_, err := IssueCert(first, RoleController, strconv.Itoa(i+1), []string{"127.0.0.1"}, dir)
			require.NoError(t, err)
		}
		out = append(out, loadBundle(t, dir))
	}
	return first, out
}

// controllerBundles issues one certificate per controller id from a CA of
// its own (a cluster of its own).
func controllerBundles(t *testing.T, ids ...uint64) []*TLSBundle {
	t.Helper()
	caDir := t.TempDir()
	require.NoError(t, CreateCA(caDir, ""))
	out := make([]*TLSBundle, 0, len(ids))
	for _, id := range ids {
		out = append(out, issueBundle(t, caDir, RoleController, strconv.FormatUint(id, 10)))
	}
	return out
}

// issueBundle issues a certificate for role and id with the CA in caDir
// into a new directory and loads it.
func issueBundle(t *testing.T, caDir string, role Role, id string) *TLSBundle {
	t.Helper()
	dir := t.TempDir()
	want, err := IssueCert(caDir, role, id, []string{"127.0.0.1"}, dir)
	require.NoError(t, err)
	b := loadBundle(t, dir)
	require.Equal(t, want, b.Self)
	return b
}

func loadBundle(t *testing.T, dir string) *TLSBundle {
	t.Helper()
	b, err := LoadTLSDir(dir)
	require.NoError(t, err)
	return b
}

type testNode struct {
	q   *QUIC
	h   *recHandler
	reg *prometheus.Registry
}

func startNode(t *testing.T, id uint64, b *TLSBundle, addr string, clusterID string) *testNode {
	t.Helper()
	fresh := addr == ""
	if fresh {
		addr = "127.0.0.1:0"
	}
	reg := prometheus.NewRegistry()
	var q *QUIC
	// A restarted node rebinds its old port; retry briefly in case the
	// kernel has not released it yet.
	require.Eventually(t, func() bool {
		var err error
		q, err = NewQUIC(QUICConfig{
			NodeID: id, ListenAddr: addr, TLS: b, Registerer: reg,
			Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
			ClusterID: func() string { return clusterID },
		})
		if err != nil {
			return false
		}
		// The kernel chose a free UDP port, whose TCP twin an outgoing
		// connection of a parallel test may hold: the node then runs
		// without its liveness and raft TCP listener (a warning, not an
		// error), and a test of them failed in CI. Take another port.
		if fresh && q.live == nil {
			_ = q.Close()
			return false
		}
		return true
	}, 5*time.Second, 20*time.Millisecond)
	h := newRecHandler()
	require.NoError(t, q.Start(h))
	t.Cleanup(func() { _ = q.Close() })
	return &testNode{q: q, h: h, reg: reg}
}

// rejectedCount reads corral_transport_peer_rejected_total{reason} from the
// registry a node registered its metrics with.
func rejectedCount(t *testing.T, reg prometheus.Gatherer, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "corral_transport_peer_rejected_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no corral_transport_peer_rejected_total series for reason %q", reason)
	return 0
}

// requireRejections checks every rejection counter of reg: want names the
// non-zero ones, all others must be zero.
func requireRejections(t *testing.T, reg prometheus.Gatherer, want map[string]float64) {
	t.Helper()
	for _, r := range []string{RejectUntrustedCert, RejectClusterID, RejectBadHeader, RejectWrongNode,
		RejectNoIdentity, RejectForeignCluster, RejectWrongRole} {
		require.Equal(t, want[r], rejectedCount(t, reg, r), "rejections for %s", r)
	}
}

func urlStrings(us []*url.URL) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.String())
	}
	return out
}

// attackerTLS is a client configuration that presents cert and accepts any
// server: what a peer that wants in would use, so that only the server's
// checks decide.
func attackerTLS(cert tls.Certificate, alpn string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{cert},
		NextProtos:         []string{alpn},
		InsecureSkipVerify: true,
	}
}

// dialRaw opens a QUIC connection to addr that the test drives by hand;
// it is closed when the test ends.
func dialRaw(t *testing.T, addr string, conf *tls.Config) *quic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, conf, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.CloseWithError(0, "") })
	return conn
}

// writeRaftStream opens a message stream on conn and writes hdr and msgs
// on it as a peer's sender would (see peer.serve), then ends the stream.
func writeRaftStream(t *testing.T, conn *quic.Conn, hdr streamHeader, msgs ...*raftpb.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	s, err := conn.OpenUniStreamSync(ctx)
	require.NoError(t, err)
	require.NoError(t, s.SetWriteDeadline(time.Now().Add(waitFor)))
	_, err = s.Write(streamBytes(t, hdr, msgs...))
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// streamBytes is a stream header followed by msgs' frames.
func streamBytes(t *testing.T, hdr streamHeader, msgs ...*raftpb.Message) []byte {
	t.Helper()
	b, err := hdr.marshal()
	require.NoError(t, err)
	for _, m := range msgs {
		out, err := encodeOut(m)
		require.NoError(t, err)
		b = append(b, out.data...)
	}
	return b
}

// closeCause waits until conn is closed and returns why.
func closeCause(t *testing.T, conn *quic.Conn) error {
	t.Helper()
	select {
	case <-conn.Context().Done():
		return context.Cause(conn.Context())
	case <-time.After(waitFor):
		t.Fatal("the server did not close the connection")
		return nil
	}
}

// dialRefused dials addr with conf and returns how the connection ended:
// the dial's error, or, as a TLS 1.3 client may finish its handshake before
// the server has checked the client certificate, the close that follows.
func dialRefused(t *testing.T, addr string, conf *tls.Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, conf, nil)
	if err != nil {
		return err
	}
	defer conn.CloseWithError(0, "")
	return closeCause(t, conn)
}

// requireRefusedAtHandshake checks that the server ended the connection
// with a TLS alert, i.e. during the handshake and before any application
// code saw the connection (which closes with application error codes).
func requireRefusedAtHandshake(t *testing.T, err error) {
	t.Helper()
	var te *quic.TransportError
	require.ErrorAs(t, err, &te, "want a refusal at the handshake, got %v", err)
	require.True(t, te.Remote, "the server must refuse: %v", err)
	require.True(t, te.ErrorCode.IsCryptoError(), "want a TLS alert: %v", err)
}

// signLeaf signs, with the CA in caDir, a certificate for 127.0.0.1 that
// carries exactly uris and usages, for certificates CreateCerts would never
// make; self is what the returned bundle believes it is (it only matters
// when the bundle dials).
func signLeaf(t *testing.T, caDir string, uris []string, usages []x509.ExtKeyUsage, self Identity) *TLSBundle {
	t.Helper()
	caCert, caKey, err := loadCA(filepath.Join(caDir, CAFile), filepath.Join(caDir, CAKeyFile))
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := randomSerial()
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "hand-made"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	for _, s := range uris {
		u, err := url.Parse(s)
		require.NoError(t, err)
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &TLSBundle{Self: self, CA: pool, Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}
}

// writeBundleDir writes b's certificate and key and the CA of caDir into a
// new TLS directory (for LoadTLSDir).
func writeBundleDir(t *testing.T, caDir string, b *TLSBundle) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := os.ReadFile(filepath.Join(caDir, CAFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, CAFile), ca, 0o644))
	require.NoError(t, writeKey(filepath.Join(dir, NodeKeyFile), b.Cert.PrivateKey.(*ecdsa.PrivateKey)))
	require.NoError(t, writePEM(filepath.Join(dir, NodeFile), "CERTIFICATE", b.Cert.Certificate[0], 0o644))
	return dir
}
