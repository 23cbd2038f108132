package transport

// Certificate-bound node identities, end to end: what the TLS checks
// decide for each kind of certificate, and what real QUIC transports on
// 127.0.0.1 do with them.

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

var bothUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

// TestTLSVerifyConnectionChecksIdentity calls the handshake checks directly
// with each kind of peer certificate.
func TestTLSVerifyConnectionChecksIdentity(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 1)
	self := bs[0] // controller 1
	cluster := self.Self.Cluster
	ctrl3 := issueBundle(t, caDir, RoleController, "3")
	worker := issueBundle(t, caDir, RoleWorker, "w1")
	peers := map[string]*TLSBundle{
		"controller 3": ctrl3,
		"worker":       worker,
		// A worker certificate with the server usage: only its role keeps
		// it from serving.
		"serving worker": signLeaf(t, caDir, []string{"corral://" + cluster + "/worker/w1"}, bothUsages, Identity{}),
		"no identity":    signLeaf(t, caDir, nil, bothUsages, Identity{}),
		"two identities": signLeaf(t, caDir, []string{"corral://" + cluster + "/controller/3", "corral://" + cluster + "/controller/1"}, bothUsages, Identity{}),
		"bad identity":   signLeaf(t, caDir, []string{"corral://" + cluster + "/controller/0"}, bothUsages, Identity{}),
		"other cluster":  signLeaf(t, caDir, []string{"corral://other/controller/3"}, bothUsages, Identity{}),
		"other CA":       controllerBundles(t, 3)[0],
	}
	state := func(peer, alpn string) tls.ConnectionState {
		b := peers[peer]
		require.NotNil(t, b, peer)
		return tls.ConnectionState{PeerCertificates: []*x509.Certificate{b.Cert.Leaf}, NegotiatedProtocol: alpn}
	}
	check := func(t *testing.T, conf func(onReject func(error)) *tls.Config, cs tls.ConnectionState, want error, reason string) {
		t.Helper()
		var rejected []error
		err := conf(func(err error) { rejected = append(rejected, err) }).VerifyConnection(cs)
		if want == nil {
			require.NoError(t, err)
			require.Empty(t, rejected)
			return
		}
		require.ErrorIs(t, err, want)
		require.Equal(t, []error{err}, rejected, "every refusal is reported once")
		require.Equal(t, reason, rejectReason(err))
	}

	t.Run("server", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			peer, alpn string
			want       error
			reason     string
		}{
			{"controller 3", ALPNRaft, nil, ""},
			{"controller 3", ALPNWorker, nil, ""},
			{"worker", ALPNWorker, nil, ""},
			{"worker", ALPNRaft, ErrRoleNotAllowed, RejectWrongRole},
			{"worker", "other/1", ErrRoleNotAllowed, RejectWrongRole},
			{"serving worker", ALPNRaft, ErrRoleNotAllowed, RejectWrongRole},
			{"no identity", ALPNRaft, ErrNoPeerIdentity, RejectNoIdentity},
			{"no identity", ALPNWorker, ErrNoPeerIdentity, RejectNoIdentity},
			{"two identities", ALPNRaft, ErrNoPeerIdentity, RejectNoIdentity},
			{"bad identity", ALPNRaft, ErrNoPeerIdentity, RejectNoIdentity},
			{"other cluster", ALPNRaft, ErrForeignCluster, RejectForeignCluster},
			{"other cluster", ALPNWorker, ErrForeignCluster, RejectForeignCluster},
			{"other CA", ALPNRaft, ErrUntrustedCert, RejectUntrustedCert},
		} {
			check(t, func(onReject func(error)) *tls.Config {
				return self.serverConfigCounting(onReject, ALPNRaft)
			}, state(tc.peer, tc.alpn), tc.want, tc.reason)
		}
	})

	t.Run("client", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			peer   string
			node   uint64 // the controller dialled; 0 = any
			want   error
			reason string
		}{
			{"controller 3", 3, nil, ""},
			{"controller 3", 0, nil, ""},
			{"controller 3", 2, ErrWrongPeerID, RejectWrongNode},
			{"controller 3", 1, ErrWrongPeerID, RejectWrongNode},
			{"worker", 0, ErrUntrustedCert, RejectUntrustedCert}, // no server usage
			{"serving worker", 0, ErrRoleNotAllowed, RejectWrongRole},
			{"serving worker", 3, ErrRoleNotAllowed, RejectWrongRole},
			{"no identity", 3, ErrNoPeerIdentity, RejectNoIdentity},
			{"two identities", 3, ErrNoPeerIdentity, RejectNoIdentity},
			{"other cluster", 3, ErrForeignCluster, RejectForeignCluster},
			{"other cluster", 0, ErrForeignCluster, RejectForeignCluster},
			{"other CA", 3, ErrUntrustedCert, RejectUntrustedCert},
		} {
			check(t, func(onReject func(error)) *tls.Config {
				return self.clientConfig(onReject, tc.node, ALPNRaft)
			}, state(tc.peer, ALPNRaft), tc.want, tc.reason)
		}
		// The public client config (QUICDialer's) takes any controller of
		// the cluster, also for a worker.
		require.NoError(t, worker.ClientConfig(ALPNWorker).VerifyConnection(state("controller 3", ALPNWorker)))
		require.ErrorIs(t, worker.ClientConfig(ALPNWorker).VerifyConnection(state("serving worker", ALPNWorker)), ErrRoleNotAllowed)
		require.ErrorIs(t, worker.ClientConfig(ALPNWorker).VerifyConnection(state("other cluster", ALPNWorker)), ErrForeignCluster)
	})
}

// A worker certificate of the cluster may not speak raft: the controller
// refuses it during the handshake. On the worker protocol it is welcome,
// and the accepted stream says whose it is.
func TestQUICWorkerCertificate_RefusedOnRaftAcceptedOnWorkerALPN(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 1)
	ctrl := startNode(t, 1, bs[0], "", "")
	l, err := ctrl.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	worker := issueBundle(t, caDir, RoleWorker, "w-1")
	addr := ctrl.q.Addr().String()

	// The worker's own checks pass (the server is a controller of its
	// cluster): the controller is the one that refuses.
	requireRefusedAtHandshake(t, dialRefused(t, addr, worker.ClientConfig(ALPNRaft)))
	requireRejections(t, ctrl.reg, map[string]float64{RejectWrongRole: 1})
	require.Empty(t, ctrl.h.received())

	s := dialWorkerStream(t, worker, addr)
	_, err = s.Write([]byte("hello"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	got, err := readWithin(t, srv, 5, waitFor)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	who, ok := srv.Peer()
	require.True(t, ok)
	require.Equal(t, Identity{Cluster: bs[0].Self.Cluster, Role: RoleWorker, ID: "w-1"}, who)
	who, ok = s.Peer()
	require.True(t, ok)
	require.Equal(t, ControllerIdentity(bs[0].Self.Cluster, 1), who)
	requireRejections(t, ctrl.reg, map[string]float64{RejectWrongRole: 1})
}

// A controller speaks for the node its certificate names and no other: a
// stream header claiming another node id is refused, and whatever follows
// it is never delivered.
func TestQUICRaftStreamHeaderMustNameTheCertificatesNode(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 1)
	n := startNode(t, 1, bs[0], "", "")
	addr := n.q.Addr().String()
	ctrl3 := issueBundle(t, caDir, RoleController, "3")

	// Control: node 3 speaking as itself is heard.
	ok := dialRaw(t, addr, ctrl3.ClientConfig(ALPNRaft))
	writeRaftStream(t, ok, streamHeader{kind: streamKindMessages, from: 3}, msg(raftpb.MsgHeartbeat, 3, 1, 0))
	require.Eventually(t, func() bool { return n.h.countFrom(3) == 1 }, waitFor, 10*time.Millisecond)

	// Node 3's certificate on a message stream that says it is node 2.
	conn := dialRaw(t, addr, ctrl3.ClientConfig(ALPNRaft))
	writeRaftStream(t, conn, streamHeader{kind: streamKindMessages, from: 2},
		msg(raftpb.MsgHeartbeat, 2, 1, 0), msg(raftpb.MsgApp, 2, 1, 1))
	requireClosedForBadHeader(t, conn)
	require.Equal(t, 1.0, rejectedCount(t, n.reg, RejectWrongNode))

	// And on a snapshot stream.
	conn = dialRaw(t, addr, ctrl3.ClientConfig(ALPNRaft))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	s, err := conn.OpenStreamSync(ctx)
	require.NoError(t, err)
	require.NoError(t, s.SetDeadline(time.Now().Add(waitFor)))
	_, err = s.Write(streamBytes(t, streamHeader{kind: streamKindSnapshot, from: 2}, snapMsg(2, 1, []byte("state"))))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	var ack [1]byte
	_, err = io.ReadFull(s, ack[:])
	require.Error(t, err, "no acknowledgement (got %d)", ack[0])
	requireClosedForBadHeader(t, conn)
	require.Equal(t, 2.0, rejectedCount(t, n.reg, RejectWrongNode))

	require.Zero(t, n.h.countFrom(2))
	require.Len(t, n.h.received(), 1)
	requireRejections(t, n.reg, map[string]float64{RejectWrongNode: 2})
	// The refusal closed only the offending connections.
	require.NoError(t, ok.Context().Err())
}

// requireClosedForBadHeader waits for the server to close conn as a peer
// that sent a bad stream header.
func requireClosedForBadHeader(t *testing.T, conn *quic.Conn) {
	t.Helper()
	err := closeCause(t, conn)
	var ae *quic.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.True(t, ae.Remote, "%v", err)
	require.Equal(t, errCodeBadHeader, ae.ErrorCode, "%v", err)
}

// foreignCADir makes the CA of another cluster that shares caDir's key (an
// operator who reused one CA key for two clusters): its certificates chain
// to caDir's CA, and only the cluster they name tells them apart.
func foreignCADir(t *testing.T, caDir, cluster string) string {
	t.Helper()
	_, key, err := loadCA(filepath.Join(caDir, CAFile), filepath.Join(caDir, CAKeyFile))
	require.NoError(t, err)
	dir := t.TempDir()
	writeCA(t, dir, key.(*ecdsa.PrivateKey), "corral://"+cluster)
	return dir
}

func TestQUICForeignClusterRefused(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 1)
	n := startNode(t, 1, bs[0], "", "")
	addr := n.q.Addr().String()
	l, err := n.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })

	otherCA := foreignCADir(t, caDir, "other")
	foreign := issueBundle(t, otherCA, RoleController, "2")
	worker := issueBundle(t, otherCA, RoleWorker, "w1")
	require.Equal(t, "other", foreign.Self.Cluster)
	// Same key: the chain alone would let them in.
	require.NoError(t, bs[0].verifyChain(foreign.Cert.Certificate, x509.ExtKeyUsageClientAuth))
	require.NoError(t, bs[0].verifyChain(worker.Cert.Certificate, x509.ExtKeyUsageClientAuth))
	require.NoError(t, foreign.verifyChain(bs[0].Cert.Certificate, x509.ExtKeyUsageServerAuth))

	// Server side: whatever the dialer accepts, the controller refuses a
	// certificate of another cluster on either protocol.
	requireRefusedAtHandshake(t, dialRefused(t, addr, attackerTLS(foreign.Cert, ALPNRaft)))
	requireRefusedAtHandshake(t, dialRefused(t, addr, attackerTLS(foreign.Cert, ALPNWorker)))
	requireRefusedAtHandshake(t, dialRefused(t, addr, attackerTLS(worker.Cert, ALPNWorker)))
	requireRejections(t, n.reg, map[string]float64{RejectForeignCluster: 3})

	// Client side: a node of the other cluster refuses our controller when
	// it dials it, and we refuse it when we dial it.
	f := startNode(t, 2, foreign, "", "")
	f.q.AddPeer(1, addr)
	n.q.AddPeer(2, f.q.Addr().String())
	require.Eventually(t, func() bool {
		f.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 2, 1, 0)})
		n.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 0)})
		return rejectedCount(t, f.reg, RejectForeignCluster) > 0 && rejectedCount(t, n.reg, RejectForeignCluster) > 3
	}, waitFor, 20*time.Millisecond)
	require.Eventually(t, func() bool { return n.h.unreachableCount(2) > 0 && f.h.unreachableCount(1) > 0 },
		waitFor, 10*time.Millisecond)
	require.False(t, n.q.PeerStatus(2).Connected)
	require.False(t, f.q.PeerStatus(1).Connected)
	require.Empty(t, n.h.received())
	require.Empty(t, f.h.received())
	require.Zero(t, rejectedCount(t, n.reg, RejectUntrustedCert))
	require.Zero(t, rejectedCount(t, f.reg, RejectUntrustedCert))
}

func TestQUICCertificateWithoutIdentityRefused(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 1)
	n := startNode(t, 1, bs[0], "", "")
	addr := n.q.Addr().String()
	l, err := n.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	cluster := bs[0].Self.Cluster

	var want float64
	for name, uris := range map[string][]string{
		"no URI":         nil,
		"other scheme":   {"spiffe://" + cluster + "/controller/2"},
		"cluster only":   {"corral://" + cluster},
		"two identities": {"corral://" + cluster + "/controller/2", "corral://" + cluster + "/controller/3"},
		"bad identity":   {"corral://" + cluster + "/controller/02"},
	} {
		b := signLeaf(t, caDir, uris, bothUsages, Identity{})
		for _, alpn := range []string{ALPNRaft, ALPNWorker} {
			err := dialRefused(t, addr, attackerTLS(b.Cert, alpn))
			requireRefusedAtHandshake(t, err)
			want++
			require.Equal(t, want, rejectedCount(t, n.reg, RejectNoIdentity), "%s on %s", name, alpn)
		}
	}
	requireRejections(t, n.reg, map[string]float64{RejectNoIdentity: want})

	// A node serving such a certificate is refused by its dialer.
	rogue := signLeaf(t, caDir, nil, bothUsages, ControllerIdentity(cluster, 2))
	r := startNode(t, 2, rogue, "", "")
	n.q.AddPeer(2, r.q.Addr().String())
	require.Eventually(t, func() bool {
		n.q.Send([]*raftpb.Message{msg(raftpb.MsgHeartbeat, 1, 2, 0)})
		return rejectedCount(t, n.reg, RejectNoIdentity) > want
	}, waitFor, 20*time.Millisecond)
	require.Empty(t, r.h.received())
	require.False(t, n.q.PeerStatus(2).Connected)
}

// A controller dialling node 2 refuses a server whose certificate names
// node 3 (a stale address now used by another node): nothing is delivered,
// and the dialer counts wrong_node.
func TestQUICDialerRefusesTheCertificateOfAnotherNode(t *testing.T) {
	t.Parallel()
	bs := clusterBundles(t, 3)
	n1 := startNode(t, 1, bs[0], "", "")
	n3 := startNode(t, 3, bs[2], "", "")
	n1.q.AddPeer(2, n3.q.Addr().String())
	require.Eventually(t, func() bool {
		n1.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 2, 1)})
		return rejectedCount(t, n1.reg, RejectWrongNode) > 0 && n1.h.unreachableCount(2) > 0
	}, waitFor, 20*time.Millisecond)
	require.False(t, n1.q.PeerStatus(2).Connected)

	// Control: the same address as node 3 works, and then shows that
	// nothing for node 2 ever reached it. It refused nothing itself: the
	// dialer decided.
	n1.q.AddPeer(3, n3.q.Addr().String())
	require.Eventually(t, func() bool {
		n1.q.Send([]*raftpb.Message{msg(raftpb.MsgApp, 1, 3, 2)})
		return n3.h.countFrom(1) > 0
	}, waitFor, 20*time.Millisecond)
	for _, m := range n3.h.received() {
		require.Equal(t, uint64(3), m.GetTo())
	}
	requireRejections(t, n3.reg, nil)
	require.False(t, n1.q.PeerStatus(2).Connected)
	require.True(t, n1.q.PeerStatus(3).Connected)
}

// QUICDialer (the worker's) takes any controller of its cluster and
// nothing else.
func TestQUICDialerRequiresAControllerOfItsCluster(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 1)
	cluster := bs[0].Self.Cluster
	worker := issueBundle(t, caDir, RoleWorker, "w1")
	for name, tc := range map[string]struct {
		server *TLSBundle
		want   error
	}{
		"a worker certificate that can serve": {
			signLeaf(t, caDir, []string{"corral://" + cluster + "/worker/w2"}, bothUsages, Identity{Cluster: cluster, Role: RoleWorker, ID: "w2"}),
			ErrRoleNotAllowed,
		},
		"a controller of another cluster": {
			issueBundle(t, foreignCADir(t, caDir, "other"), RoleController, "1"),
			ErrForeignCluster,
		},
		"a controller without identity": {
			signLeaf(t, caDir, nil, bothUsages, ControllerIdentity(cluster, 1)),
			ErrNoPeerIdentity,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := startNode(t, 1, tc.server, "", "")
			l, err := srv.q.ListenStreams(ALPNWorker)
			require.NoError(t, err)
			t.Cleanup(func() { l.Close() })
			d, err := NewQUICDialer(QUICDialerConfig{TLS: worker, ALPN: ALPNWorker, LocalAddr: "127.0.0.1:0"})
			require.NoError(t, err)
			t.Cleanup(func() { d.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			s, err := d.DialStream(ctx, srv.q.Addr().String())
			if s != nil {
				s.Close()
			}
			require.Error(t, err)
			var te *quic.TransportError
			require.ErrorAs(t, err, &te)
			require.False(t, te.Remote, "the dialer refuses: %v", err)
			require.True(t, errors.Is(err, tc.want), "want %v, got %v", tc.want, err)
		})
	}
}

// In-memory streams report the identity their dialer was given.
func TestMemStream_Peer(t *testing.T) {
	t.Parallel()
	n := NewMemNetwork(1)
	l, err := n.ListenStreams(1, "mem-peer-1")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	who := Identity{Cluster: "c1", Role: RoleWorker, ID: "w-7"}
	for _, tc := range []struct {
		d    StreamDialer
		want Identity
		ok   bool
	}{
		{n.StreamDialerAs(100, who), who, true},
		{n.StreamDialer(101), Identity{}, false},
		{n.StreamDialerAs(102, ControllerIdentity("c1", 2)), ControllerIdentity("c1", 2), true},
	} {
		t.Cleanup(func() { tc.d.Close() })
		c, err := tc.d.DialStream(context.Background(), "mem-peer-1")
		require.NoError(t, err)
		s, err := l.Accept(context.Background())
		require.NoError(t, err)
		got, ok := s.Peer()
		require.Equal(t, tc.ok, ok)
		require.Equal(t, tc.want, got)
		require.NoError(t, c.Close())
		require.NoError(t, s.Close())
	}
}
