package worker

import (
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// noRaft is the raft handler of a transport that has no raft peers: it
// only serves joins and worker sessions, so no method is ever called (the
// worker tree does not import raft).
type noRaft struct{ transport.Handler }

// joinController is a controller's QUIC transport (real TLS, real QUIC)
// whose join handler signs with the cluster CA unless told to refuse.
type joinController struct {
	q      *transport.QUIC
	caDir  string
	ln     transport.StreamListener
	calls  atomic.Int64
	mu     sync.Mutex
	refuse *transport.JoinAnswer
	last   transport.JoinRequest
}

func startJoinController(t *testing.T) *joinController {
	t.Helper()
	caDir := t.TempDir()
	require.NoError(t, transport.CreateCA(caDir, "prod"))
	tlsDir := t.TempDir()
	_, err := transport.IssueCert(caDir, transport.RoleController, "1", nil, tlsDir)
	require.NoError(t, err)
	b, err := transport.LoadTLSDir(tlsDir)
	require.NoError(t, err)
	q, err := transport.NewQUIC(transport.QUICConfig{NodeID: 1, ListenAddr: "127.0.0.1:0", TLS: b,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ca, err := transport.LoadCA(caDir)
	require.NoError(t, err)
	c := &joinController{q: q, caDir: caDir}
	q.HandleJoin(func(_ context.Context, _ net.Addr, req transport.JoinRequest) transport.JoinAnswer {
		c.calls.Add(1)
		c.mu.Lock()
		c.last = req
		refuse := c.refuse
		c.mu.Unlock()
		if refuse != nil {
			return *refuse
		}
		csr, err := x509.ParseCertificateRequest(req.CSR)
		if err != nil {
			return transport.Refuse(transport.JoinBadRequest, "%v", err)
		}
		der, err := ca.Sign(csr, transport.RoleWorker, req.Worker, nil)
		if err != nil {
			return transport.Refuse(transport.JoinBadRequest, "%v", err)
		}
		return transport.JoinAnswer{Cert: der}
	})
	c.ln, err = q.ListenStreams(transport.ALPNWorker)
	require.NoError(t, err)
	require.NoError(t, q.Start(noRaft{}))
	t.Cleanup(func() {
		_ = c.ln.Close()
		_ = q.Close()
	})
	return c
}

func (c *joinController) setRefusal(a *transport.JoinAnswer) {
	c.mu.Lock()
	c.refuse = a
	c.mu.Unlock()
}

// lastRequest is the last join request the controller handled. The
// handler runs on the transport's goroutine: the answer reaching the
// worker over the network is no happens-before edge the race detector sees.
func (c *joinController) lastRequest() transport.JoinRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *joinController) addr() string { return c.q.Addr().String() }

const testJoinToken = "corral-join-0123456789abcdef.0000000000000000000000000000000000000000000000000000000000000000"

func joinConfig(c *joinController, dataDir string) Config {
	return Config{DataDir: dataDir, Controllers: []string{c.addr()}, JoinToken: testJoinToken,
		CACert: filepath.Join(c.caDir, transport.CAFile), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestJoin_FirstStartTradesTheTokenForACertificate(t *testing.T) {
	t.Parallel()
	c := startJoinController(t)
	dataDir := t.TempDir()
	cfg := joinConfig(c, dataDir)
	cfg.ID = "w-joined"
	w, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(w.Halt)
	require.Equal(t, "w-joined", w.ID())
	require.EqualValues(t, 1, c.calls.Load())
	last := c.lastRequest()
	require.Equal(t, testJoinToken, last.Token)
	require.Equal(t, "w-joined", last.Worker)

	dir := filepath.Join(dataDir, JoinTLSDir)
	for f, mode := range map[string]os.FileMode{transport.CAFile: 0o644, transport.NodeFile: 0o644, transport.NodeKeyFile: 0o600} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		require.Equal(t, mode, st.Mode().Perm(), f)
	}
	_, err = os.Stat(filepath.Join(dir, transport.CAKeyFile))
	require.ErrorIs(t, err, os.ErrNotExist, "the CA key never reaches a worker")
	b, err := transport.LoadTLSDir(dir)
	require.NoError(t, err)
	require.Equal(t, transport.Identity{Cluster: "prod", Role: transport.RoleWorker, ID: "w-joined"}, b.Self)

	// The worker then runs with it: its session reaches the controller as
	// the worker its new certificate names.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.ln.Accept(ctx)
	require.NoError(t, err)
	peer, ok := s.Peer()
	require.True(t, ok)
	require.Equal(t, b.Self, peer)
	_ = s.Close()
	w.Halt()

	// A restart uses the files: the token is not asked about again, and
	// would not be needed.
	c.setRefusal(&transport.JoinAnswer{Code: transport.JoinTokenUsedUp, Message: "used up"})
	w2, err := Start(joinConfig(c, dataDir))
	require.NoError(t, err)
	t.Cleanup(w2.Halt)
	require.Equal(t, "w-joined", w2.ID())
	require.EqualValues(t, 1, c.calls.Load())
}

func TestJoin_ARefusalEndsTheStart(t *testing.T) {
	t.Parallel()
	c := startJoinController(t)
	msg := "join token expired at 2030-01-01T00:00:00Z: create a new one with 'corral token create --role worker'"
	c.setRefusal(&transport.JoinAnswer{Code: transport.JoinTokenExpired, Message: msg})
	dataDir := t.TempDir()
	_, err := Start(joinConfig(c, dataDir))
	require.EqualError(t, err, "join refused by controller "+c.addr()+": "+msg)
	var je *transport.JoinError
	require.ErrorAs(t, err, &je)
	require.Equal(t, transport.JoinTokenExpired, je.Code)
	_, err = os.Stat(filepath.Join(dataDir, JoinTLSDir, transport.NodeFile))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.EqualValues(t, 1, c.calls.Load(), "a refusal of the token is not retried")
}

// A controller that cannot sign is passed over for one that can; when none
// can, the worker stops with the controllers' reason.
func TestJoin_ControllersWithoutCA(t *testing.T) {
	t.Parallel()
	noCA, signer := startJoinController(t), startJoinController(t)
	noCAAnswer := transport.Refuse(transport.JoinNoCA, "controller 1 cannot sign certificates: it was started without --ca-dir")
	noCA.setRefusal(&noCAAnswer)

	cfg := joinConfig(noCA, t.TempDir())
	_, err := Start(cfg)
	require.ErrorContains(t, err, "no controller can admit this worker: controller "+noCA.addr()+": controller 1 cannot sign certificates: it was started without --ca-dir")

	// Another cluster's controller (its certificate does not chain to
	// --ca-cert) is not asked at all.
	cfg = joinConfig(noCA, t.TempDir())
	cfg.Controllers = []string{signer.addr(), noCA.addr()}
	_, err = Start(cfg)
	require.ErrorContains(t, err, "no controller can admit this worker")
	require.ErrorIs(t, err, transport.ErrUntrustedCert)
	require.Zero(t, signer.calls.Load())

	cfg = joinConfig(signer, t.TempDir())
	cfg.Controllers = []string{noCA.addr(), signer.addr()}
	// noCA is of another cluster for signer's CA: both are tried.
	w, err := Start(cfg)
	require.NoError(t, err)
	w.Halt()
	require.EqualValues(t, 1, signer.calls.Load())
}

// A worker whose controllers cannot be reached keeps trying until its
// JoinContext ends (the process is stopping).
func TestJoin_StopsWithItsContext(t *testing.T) {
	t.Parallel()
	c := startJoinController(t)
	busy := transport.Refuse(transport.JoinUnavailable, "no leader; retry")
	c.setRefusal(&busy)
	cfg := joinConfig(c, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cfg.JoinContext = ctx
	done := make(chan error, 1)
	go func() {
		_, err := Start(cfg)
		done <- err
	}()
	require.Eventually(t, func() bool { return c.calls.Load() >= 2 }, 20*time.Second, 10*time.Millisecond, "the worker does not retry")
	cancel()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "no controller answered")
		require.ErrorContains(t, err, "no leader; retry")
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return when its join context ended")
	}
}

func TestJoin_ConfigRefusals(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	caDir := t.TempDir()
	require.NoError(t, transport.CreateCA(caDir, "prod"))
	ca := filepath.Join(caDir, transport.CAFile)
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"token and TLS dir", Config{JoinToken: testJoinToken, CACert: ca, TLSDir: "/x"}, "give --tls-dir or --join-token, not both"},
		{"token without CA", Config{JoinToken: testJoinToken}, "--join-token needs --ca-cert"},
		{"CA without token", Config{TLSDir: "/x", CACert: ca}, "--ca-cert goes with --join-token"},
		{"neither", Config{}, "--tls-dir is required"},
		{"garbled token", Config{JoinToken: "corral-join-x", CACert: ca}, "--join-token: join token: want corral-join-"},
		{"missing CA file", Config{JoinToken: testJoinToken, CACert: filepath.Join(caDir, "nope.pem")}, "--ca-cert: read CA certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.DataDir, cfg.Controllers, cfg.Logger = t.TempDir(), []string{"127.0.0.1:1"}, quiet
			_, err := Start(cfg)
			require.ErrorContains(t, err, tc.err)
			_, err = os.Stat(filepath.Join(cfg.DataDir, JoinTLSDir))
			require.ErrorIs(t, err, os.ErrNotExist)
		})
	}
	_, _, err := metadata.ParseJoinToken(testJoinToken)
	require.NoError(t, err, "the test token is well-formed")
}
