package integration

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/transport"
)

// Attacks on node identities against real controller processes. Each
// attacker holds a key the cluster's CA signed, so it gets past the chain
// check; what it claims to be must still be refused, counted, and change
// nothing: the same leader in the same term, every process running, and
// the cluster still taking writes.

// TestIdentity_WorkerCertificateRefusedOnRaftPort: a worker's certificate,
// issued by the cluster's CA, speaking raft. It is refused in the TLS
// handshake (wrong_role), so its forged messages (leadership handed to a
// follower, an empty snapshot, an acknowledgement past the leader's log)
// never reach raft.
func TestIdentity_WorkerCertificateRefusedOnRaftPort(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	before := c.agreedView()
	workerTLS := loadTLS(t, c.issue(roleWorker, "w-intruder", filepath.Join(t.TempDir(), "tls")))

	c.raftAttacks(before, workerTLS, transport.RejectWrongRole)

	// Refused in the handshake itself, not after it: the connection dies of
	// a TLS alert, before any raft stream could be opened.
	for id, n := range c.nodes {
		err := raftHandshake(t, workerTLS, n.clusterAddr)
		var te *quic.TransportError
		require.True(t, errors.As(err, &te) && te.Remote && te.ErrorCode.IsCryptoError(),
			"controller %d let a worker certificate complete a raft handshake (connection ended with %v)", id, err)
	}
	c.requireUnharmed(before, "identity/after-worker-on-raft")
}

// TestIdentity_ControllerCannotSpeakAsAnotherController: controller G's own
// certificate, on streams that claim to come from the leader (to the
// followers) and from a follower (to the leader). The stream header must
// name the node the certificate names (wrong_node); a follower that took
// the leader's MsgTimeoutNow would start an election.
func TestIdentity_ControllerCannotSpeakAsAnotherController(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	before := c.agreedView()
	// Each claim is made with the certificate of another controller: the
	// lowest id that is not the one claimed.
	bundles := map[uint64]*transport.TLSBundle{}
	for id, n := range c.nodes {
		bundles[id] = loadTLS(t, n.tlsDir)
		require.Equal(t, id, bundles[id].Self.NodeID())
	}
	other := func(claim uint64) *transport.TLSBundle {
		for id := uint64(1); ; id++ {
			if id != claim {
				return bundles[id]
			}
		}
	}
	c.raftAttacksWith(before, other, transport.RejectWrongNode)
	c.requireUnharmed(before, "identity/after-wrong-node")
}

// TestIdentity_ForeignClusterCertificateFromSameCA: a controller certificate
// signed by this cluster's CA key but naming another cluster. The chain is
// good; the cluster is not (foreign_cluster).
func TestIdentity_ForeignClusterCertificateFromSameCA(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	before := c.agreedView()

	c.raftAttacksWith(before, func(claim uint64) *transport.TLSBundle { return c.foreignClusterBundle(claim) },
		transport.RejectForeignCluster)
	c.requireUnharmed(before, "identity/after-foreign-cluster")
}

// TestIdentity_WorkerCannotSpeakForAnotherWorker: worker w-b's certificate
// on the worker protocol, speaking for the live worker w-a: a heartbeat
// that would make w-a leave (with its real epoch and incarnation, which
// the API shows anyone) and a registration that would take its id. Each
// stream is closed unanswered and counted; w-a keeps its session. The same
// certificate may still register as w-b.
func TestIdentity_WorkerCannotSpeakForAnotherWorker(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	wa := c.newWorker("w-a")
	wa.start()
	require.Equal(t, "w-a", wa.id())
	victim := c.waitWorker("w-a", "alive", 30*time.Second)
	require.Eventually(t, wa.ready, 10*time.Second, 20*time.Millisecond)
	before := c.agreedView()
	leader := c.nodes[before.leader]

	wbTLS := loadTLS(t, c.issue(roleWorker, "w-b", filepath.Join(t.TempDir(), "tls")))
	d, err := transport.NewQUICDialer(transport.QUICDialerConfig{TLS: wbTLS, ALPN: transport.ALPNWorker, Logger: testLogger(t)})
	require.NoError(t, err)
	defer d.Close()

	const counter = "corral_workers_impersonations_refused_total"
	impersonations := []transport.WorkerMessage{
		&transport.Heartbeat{Seq: 1, WorkerID: "w-a", Incarnation: victim.Incarnation, Epoch: victim.Epoch,
			Leaving: true, HeartbeatIntervalMS: uint64(itHeartbeat.Milliseconds())},
		&transport.Register{Seq: 1, WorkerID: "w-a", Incarnation: "intruder", Version: "it",
			HeartbeatIntervalMS: uint64(itHeartbeat.Milliseconds())},
	}
	for _, m := range impersonations {
		refused := metricValue(t, leader, counter)
		reply, err := workerExchange(t, d, leader.clusterAddr, m)
		require.Nil(t, reply, "the leader answered %T naming w-a on w-b's certificate", m)
		require.Error(t, err)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the stream was left open, not closed: %v", err)
		require.Greater(t, metricValue(t, leader, counter), refused, "impersonation by %T not counted", m)
	}

	// The certificate itself is good: it registers as the worker it names.
	reply, err := workerExchange(t, d, leader.clusterAddr, &transport.Register{Seq: 1, WorkerID: "w-b",
		Incarnation: "intruder", Version: "it", HeartbeatIntervalMS: uint64(itHeartbeat.Milliseconds())})
	require.NoError(t, err)
	require.IsType(t, &transport.Registered{}, reply)

	ws, _, ok := c.leaderWorkers()
	require.True(t, ok)
	got := ws["w-a"]
	require.Equal(t, "alive", got.State, "w-a lost its session")
	require.Equal(t, victim.Epoch, got.Epoch, "w-a's epoch moved")
	require.Equal(t, victim.Incarnation, got.Incarnation, "w-a's id was taken over")
	require.True(t, wa.ready())
	c.requireUnharmed(before, "identity/after-worker-impersonation", wa)
}

// raftView is who leads, and in which term, as every controller reports it.
type raftView struct{ leader, term uint64 }

// agreedView waits until every controller reports the same leader and term.
func (c *cluster) agreedView() raftView {
	c.t.Helper()
	var v raftView
	require.Eventually(c.t, func() bool {
		v = raftView{}
		for _, n := range c.nodes {
			ci, err := n.info()
			if err != nil || ci.LeaderID == 0 || (v.leader != 0 && (raftView{ci.LeaderID, ci.Term} != v)) {
				return false
			}
			v = raftView{ci.LeaderID, ci.Term}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the controllers never agreed on a leader and term")
	return v
}

// requireUnharmed checks that an attack changed nothing: every process
// still runs, every controller reports the leader and term of before, and
// a write made now is read back from every controller.
func (c *cluster) requireUnharmed(before raftView, key string, workers ...*workerProc) {
	t := c.t
	t.Helper()
	for id, n := range c.nodes {
		select {
		case <-n.exited:
			t.Fatalf("controller %d exited", id)
		default:
		}
		ci, err := n.info()
		require.NoError(t, err)
		require.Equal(t, before, raftView{ci.LeaderID, ci.Term}, "controller %d: leader and term moved", id)
	}
	for _, w := range workers {
		select {
		case <-w.exited:
			t.Fatalf("worker %s exited", w.name)
		default:
		}
	}
	_, err := c.client().Put(context.Background(), key, []byte("ok"))
	require.NoError(t, err)
	for id := range c.nodes {
		require.Eventually(t, func() bool {
			kv, err := c.client(id).Get(context.Background(), key, client.Serializable())
			return err == nil && string(kv.Value) == "ok"
		}, 20*time.Second, 20*time.Millisecond, "controller %d never served the write made after the attack", id)
	}
}

// raftAttacks runs raftAttacksWith with one bundle for every claim.
func (c *cluster) raftAttacks(before raftView, bundle *transport.TLSBundle, reason string) {
	c.t.Helper()
	c.raftAttacksWith(before, func(uint64) *transport.TLSBundle { return bundle }, reason)
}

// raftAttacksWith forges raft traffic twice: as the leader, to each
// follower (a MsgTimeoutNow from its leader in its term makes a follower
// campaign at once), and as a follower, to the leader. Each attacker holds
// bundleFor(the id it claims). Every target must count a refusal for
// reason.
func (c *cluster) raftAttacksWith(before raftView, bundleFor func(claim uint64) *transport.TLSBundle, reason string) {
	c.t.Helper()
	var followers []uint64
	for id := range c.nodes {
		if id != before.leader {
			followers = append(followers, id)
		}
	}
	c.raftAttack(bundleFor(before.leader), before.leader, followers, before.term, reason)
	c.raftAttack(bundleFor(followers[0]), followers[0], []uint64{before.leader}, before.term, reason)
}

// raftAttack starts a raft transport that claims node id claim and holds
// bundle, and sends forged messages to targets until every target has
// counted a refusal for reason; then it stops the attacker.
func (c *cluster) raftAttack(bundle *transport.TLSBundle, claim uint64, targets []uint64, term uint64, reason string) {
	t := c.t
	t.Helper()
	counted := map[uint64]float64{}
	for _, id := range targets {
		counted[id] = rejected(t, c.nodes[id], reason)
	}
	a, err := transport.NewQUIC(transport.QUICConfig{NodeID: claim, ListenAddr: "127.0.0.1:0", TLS: bundle,
		Registerer: prometheus.NewRegistry(), Logger: testLogger(t)})
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.Start(nopHandler{}))
	for _, id := range targets {
		a.AddPeer(id, c.nodes[id].clusterAddr)
	}
	// The transport drops what it cannot deliver, so the attack is repeated
	// until each target has refused it.
	require.Eventually(t, func() bool {
		for _, id := range targets {
			a.Send(forgedRaft(claim, id, term))
		}
		for _, id := range targets {
			if rejected(t, c.nodes[id], reason) <= counted[id] {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond, "certificate %s claiming node %d to %v: no %s refusal counted",
		bundle.Cert.Leaf.URIs, claim, targets, reason)
}

// forgedRaft is what an attacker claiming node from sends to node to, in
// term: leadership handed over (raft campaigns on a MsgTimeoutNow from its
// leader), an empty snapshot and an acknowledgement of entries far past
// the log (raft panics on both; the controllers also drop them before
// raft, but the transport must not deliver them in the first place).
func forgedRaft(from, to, term uint64) []*raftpb.Message {
	return []*raftpb.Message{
		{Type: raftpb.MsgTimeoutNow.Enum(), From: new(from), To: new(to), Term: new(term)},
		{Type: raftpb.MsgSnap.Enum(), From: new(from), To: new(to), Term: new(term), Snapshot: &raftpb.Snapshot{}},
		{Type: raftpb.MsgAppResp.Enum(), From: new(from), To: new(to), Term: new(term), Index: new(uint64(1 << 40))},
	}
}

// nopHandler is an attacker's raft: it ignores whatever comes back.
type nopHandler struct{}

func (nopHandler) Process(context.Context, *raftpb.Message) error { return nil }
func (nopHandler) ReportUnreachable(uint64)                       {}
func (nopHandler) ReportSnapshot(uint64, raft.SnapshotStatus)     {}

// raftHandshake dials addr with the raft protocol and bundle's certificate,
// and returns how the connection ended: a client finishes its side of a
// TLS 1.3 handshake before the server has checked the client certificate,
// so a refusal arrives as the connection's close.
func raftHandshake(t *testing.T, bundle *transport.TLSBundle, addr string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{bundle.Cert},
		NextProtos: []string{transport.ALPNRaft}, InsecureSkipVerify: true, // the server is not what is tested
	}, nil)
	if err != nil {
		return err
	}
	defer conn.CloseWithError(0, "")
	select {
	case <-conn.Context().Done():
		return context.Cause(conn.Context())
	case <-ctx.Done():
		return fmt.Errorf("connection still open after the handshake: %w", ctx.Err())
	}
}

// workerExchange sends m as the first message of a new worker stream and
// returns the controller's answer, or the error that ended the stream.
func workerExchange(t *testing.T, d *transport.QUICDialer, addr string, m transport.WorkerMessage) (transport.WorkerMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := d.DialStream(ctx, addr)
	require.NoError(t, err)
	defer s.Close()
	frame, err := transport.AppendWorkerFrame(transport.WorkerPreamble(), m)
	require.NoError(t, err)
	_, err = s.Write(frame)
	require.NoError(t, err)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(10*time.Second)))
	reply, _, err := transport.ReadControllerMessage(bufio.NewReader(s), nil)
	return reply, err
}

// foreignClusterBundle is a controller certificate for claim that this
// cluster's CA key signed, naming another cluster: everything about it is
// right but the cluster.
func (c *cluster) foreignClusterBundle(claim uint64) *transport.TLSBundle {
	t := c.t
	t.Helper()
	ca, err := tls.LoadX509KeyPair(filepath.Join(c.caDir(), transport.CAFile), filepath.Join(c.caDir(), transport.CAKeyFile))
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	require.NoError(t, err)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "controller " + strconv.FormatUint(claim, 10), Organization: []string{"corral"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		URIs:         []*url.URL{{Scheme: "corral", Host: "other-cluster", Path: "/controller/" + strconv.FormatUint(claim, 10)}},
	}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	// Sanity: the chain is this cluster's, the identity well-formed.
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	ident, err := transport.IdentityOf(leaf)
	require.NoError(t, err)
	require.Equal(t, transport.ControllerIdentity("other-cluster", claim), ident)
	return &transport.TLSBundle{
		// Self is what the attacker's own client checks the controllers
		// against: the cluster it attacks. Its certificate says otherwise.
		Self: transport.ControllerIdentity(c.name, claim),
		CA:   pool,
		Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
	}
}

func loadTLS(t *testing.T, dir string) *transport.TLSBundle {
	t.Helper()
	b, err := transport.LoadTLSDir(dir)
	require.NoError(t, err)
	return b
}

// testLogger logs an in-test attacker's transport to the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}
