package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/transport"
)

// joinFixture is a joinServer over a real state machine that applies each
// proposal at the next index, as a controller's apply loop would.
type joinFixture struct {
	j     *joinServer
	ca    *transport.CA
	mu    sync.Mutex
	st    *metadata.State
	index uint64
	fail  error // when set, every proposal fails with it before applying
	now   time.Time
}

func newJoinFixture(t *testing.T, withCA bool) *joinFixture {
	t.Helper()
	f := &joinFixture{st: metadata.New(), now: time.UnixMilli(1_800_000_000_000)}
	if withCA {
		dir := t.TempDir()
		require.NoError(t, transport.CreateCA(dir, "prod"))
		ca, err := transport.LoadCA(dir)
		require.NoError(t, err)
		f.ca = ca
	}
	f.j = newJoinServer(1, f.ca, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)), f.propose)
	f.j.now = func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	return f
}

func (f *joinFixture) propose(_ context.Context, op metadata.Op, v any) (metadata.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return metadata.Result{}, f.fail
	}
	cmd, err := metadata.NewWorkerCommand(op, v)
	if err != nil {
		return metadata.Result{}, err
	}
	f.index++
	cmd.ID = f.index
	_, res := f.st.Apply(f.index, cmd.Marshal())
	return res, res.Err
}

func (f *joinFixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// token creates a token (as the API does) and returns its string.
func (f *joinFixture) token(t *testing.T, uses int, ttl time.Duration) string {
	t.Helper()
	id, secret := make([]byte, metadata.JoinTokenIDBytes), make([]byte, metadata.JoinTokenSecretBytes)
	_, _ = rand.Read(id)
	_, _ = rand.Read(secret)
	at := f.j.now().UnixMilli()
	req := metadata.JoinTokenCreate{ID: hex.EncodeToString(id), SecretSHA256: metadata.JoinTokenSecretHash(secret),
		Role: "worker", Uses: uses, AtMS: at, ExpiresAtMS: at + ttl.Milliseconds()}
	_, err := f.propose(context.Background(), metadata.OpJoinTokenCreate, req)
	require.NoError(t, err)
	return metadata.FormatJoinToken(req.ID, secret)
}

func csrFor(t *testing.T) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "controller 1"}}, key)
	require.NoError(t, err)
	return key, der
}

var testRemote = &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}

func (f *joinFixture) join(tok, worker string, csr []byte) transport.JoinAnswer {
	return f.j.serve(context.Background(), testRemote, transport.JoinRequest{Token: tok, Worker: worker, CSR: csr})
}

func TestJoinServer_SignsOnceTheTokenIsSpent(t *testing.T) {
	t.Parallel()
	f := newJoinFixture(t, true)
	tok := f.token(t, 1, time.Hour)
	key, csr := csrFor(t)
	ans := f.join(tok, "w-1", csr)
	require.Equal(t, transport.JoinOK, ans.Code, ans.Message)
	cert, err := x509.ParseCertificate(ans.Cert)
	require.NoError(t, err)
	id, err := transport.IdentityOf(cert)
	require.NoError(t, err)
	require.Equal(t, transport.Identity{Cluster: "prod", Role: transport.RoleWorker, ID: "w-1"}, id,
		"the certificate names the worker, whatever the request's subject says")
	require.True(t, key.PublicKey.Equal(cert.PublicKey))
	require.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)

	// The answer got lost: the same worker and key may ask again.
	again := f.join(tok, "w-1", csr)
	require.Equal(t, transport.JoinOK, again.Code, again.Message)
	// Anyone else finds the token used up.
	_, csr2 := csrFor(t)
	ans = f.join(tok, "w-2", csr2)
	require.Equal(t, transport.JoinTokenUsedUp, ans.Code)
	require.Contains(t, ans.Message, "join token used up: all 1 use(s) were spent, the last by worker w-1")
	require.Contains(t, ans.Message, "create a new one with 'corral token create --role worker'")
	ans = f.join(tok, "w-1", csr2)
	require.Equal(t, transport.JoinTokenUsedUp, ans.Code, "another key is another worker")

	require.Equal(t, 2.0, testutil.ToFloat64(f.j.requests.WithLabelValues("ok")))
	require.Equal(t, 2.0, testutil.ToFloat64(f.j.requests.WithLabelValues("used_up")))
}

func TestJoinServer_Refusals(t *testing.T) {
	t.Parallel()
	f := newJoinFixture(t, true)
	_, csr := csrFor(t)
	tok := f.token(t, 5, time.Hour)
	id, _, err := metadata.ParseJoinToken(tok)
	require.NoError(t, err)
	wrongSecret := tok[:len(tok)-4] + "0000"
	if wrongSecret == tok {
		wrongSecret = tok[:len(tok)-4] + "1111"
	}
	badCSR := append([]byte(nil), csr...)
	badCSR[len(badCSR)-1] ^= 1
	revoked := metadata.RevokeRequest{Worker: "w-bad", AtMS: 1}
	_, err = f.propose(context.Background(), metadata.OpCertRevoke, revoked)
	require.NoError(t, err)
	reg := metadata.WorkerRegistration{ID: "w-alive", Epoch: 1, Incarnation: "i", ControllerEpoch: 1, AtMS: 1}
	_, err = f.propose(context.Background(), metadata.OpWorkerRegister, reg)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, tok, worker string
		csr               []byte
		code              transport.JoinCode
		msg               string
	}{
		{"garbled token", "corral-join-nope", "w-1", csr, transport.JoinBadRequest, "join token: want corral-join-"},
		{"unknown token", metadata.FormatJoinToken("0123456789abcdef", make([]byte, 32)), "w-1", csr, transport.JoinTokenUnknown,
			"unknown join token 0123456789abcdef: it was revoked, expired or was used up more than 24h0m0s ago, or never existed: create a new one"},
		{"wrong secret", wrongSecret, "w-1", csr, transport.JoinTokenWrongSecret, "wrong secret for join token " + id},
		{"bad worker id", tok, "no spaces please", csr, transport.JoinBadRequest, `worker id "no spaces please"`},
		{"garbled CSR", tok, "w-1", []byte("junk"), transport.JoinBadRequest, "certificate request: "},
		{"CSR signature", tok, "w-1", badCSR, transport.JoinBadRequest, "certificate request: "},
		{"revoked worker", tok, "w-bad", csr, transport.JoinWorkerRefused, "worker id is revoked: w-bad"},
		{"known worker", tok, "w-alive", csr, transport.JoinWorkerRefused, "w-alive is alive: a join token cannot take over that id"},
	} {
		ans := f.join(tc.tok, tc.worker, tc.csr)
		require.Equal(t, tc.code, ans.Code, "%s: %s", tc.name, ans.Message)
		require.Contains(t, ans.Message, tc.msg, tc.name)
		require.NotContains(t, ans.Message, tok[len(tok)-64:], "%s: a refusal repeats the secret", tc.name)
	}
	info, ok := f.st.JoinToken(id)
	require.True(t, ok)
	require.Equal(t, 5, info.UsesLeft, "no refusal spent a use")

	// Expiry follows the proposer's clock.
	f.advance(time.Hour)
	ans := f.join(tok, "w-1", csr)
	require.Equal(t, transport.JoinTokenExpired, ans.Code)
	require.Equal(t, "join token expired at "+time.UnixMilli(1_800_000_000_000).Add(time.Hour).UTC().Format(time.RFC3339)+
		": create a new one with 'corral token create --role worker'", ans.Message)

	// No quorum: retry.
	f.fail = fault.ErrNoLeader
	ans = f.join(f.tokenNoPropose(t), "w-1", csr)
	require.Equal(t, transport.JoinUnavailable, ans.Code)
	f.fail = fault.ErrTimeout
	ans = f.join(f.tokenNoPropose(t), "w-1", csr)
	require.Equal(t, transport.JoinUnavailable, ans.Code)
	require.Contains(t, ans.Message, "spends no further use")
	require.Equal(t, 1.0, testutil.ToFloat64(f.j.requests.WithLabelValues("expired")))
	require.Equal(t, 2.0, testutil.ToFloat64(f.j.requests.WithLabelValues("unavailable")))
	require.Equal(t, 4.0, testutil.ToFloat64(f.j.requests.WithLabelValues("bad_request")))
}

// tokenNoPropose is a well-formed token that was never created.
func (f *joinFixture) tokenNoPropose(t *testing.T) string {
	t.Helper()
	return metadata.FormatJoinToken("00000000000000aa", make([]byte, metadata.JoinTokenSecretBytes))
}

func TestJoinServer_WithoutCANamesTheFlag(t *testing.T) {
	t.Parallel()
	f := newJoinFixture(t, false)
	tok := f.token(t, 1, time.Hour)
	_, csr := csrFor(t)
	ans := f.join(tok, "w-1", csr)
	require.Equal(t, transport.JoinNoCA, ans.Code)
	require.Contains(t, ans.Message, "controller 1 cannot sign certificates: it was started without --ca-dir")
	info, _ := f.st.JoinToken(strings.TrimPrefix(tok, metadata.JoinTokenPrefix)[:16])
	require.Equal(t, 1, info.UsesLeft, "a controller that cannot sign spends nothing")
	require.Equal(t, 1.0, testutil.ToFloat64(f.j.requests.WithLabelValues("no_ca")))
}

// The cluster port takes join requests from anyone: past the bucket they
// are refused before anything is proposed.
func TestJoinServer_RateLimited(t *testing.T) {
	t.Parallel()
	f := newJoinFixture(t, true)
	_, csr := csrFor(t)
	tok := f.tokenNoPropose(t)
	for range JoinBurst {
		require.Equal(t, transport.JoinTokenUnknown, f.join(tok, "w-1", csr).Code)
	}
	proposed := f.index
	ans := f.join(tok, "w-1", csr)
	require.Equal(t, transport.JoinRateLimited, ans.Code)
	require.Contains(t, ans.Message, "at most 10 join requests a second")
	require.Equal(t, proposed, f.index, "a limited request reached raft")
	f.advance(time.Second / JoinRate)
	require.Equal(t, transport.JoinTokenUnknown, f.join(tok, "w-1", csr).Code)
	require.Equal(t, transport.JoinRateLimited, f.join(tok, "w-1", csr).Code)
	require.Equal(t, 2.0, testutil.ToFloat64(f.j.requests.WithLabelValues("rate_limited")))
}

func TestTokenBucket(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(100, 0)
	b := newTokenBucket(10, 2, t0)
	require.True(t, b.allow(t0))
	require.True(t, b.allow(t0))
	require.False(t, b.allow(t0))
	require.False(t, b.allow(t0.Add(50*time.Millisecond)))
	require.True(t, b.allow(t0.Add(100*time.Millisecond)))
	require.True(t, b.allow(t0.Add(time.Hour)))
	require.True(t, b.allow(t0.Add(time.Hour)))
	require.False(t, b.allow(t0.Add(time.Hour)), "the burst caps what idle time saves")
	require.False(t, b.allow(t0), "a clock going back gives nothing")
}

func TestLoadJoinCA(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	caDir := t.TempDir()
	require.NoError(t, transport.CreateCA(caDir, "prod"))
	tlsDir := t.TempDir()
	_, err := transport.IssueCert(caDir, transport.RoleController, "1", nil, tlsDir)
	require.NoError(t, err)
	ca, err := loadJoinCA(&Config{CADir: caDir, TLSDir: tlsDir})
	require.NoError(t, err)
	require.Equal(t, "prod", ca.Cluster)
	ca, err = loadJoinCA(&Config{TLSDir: tlsDir})
	require.NoError(t, err)
	require.Nil(t, ca)

	_, err = loadJoinCA(&Config{CADir: caDir})
	require.ErrorContains(t, err, "--ca-dir needs --tls-dir")
	_, err = loadJoinCA(&Config{CADir: t.TempDir(), TLSDir: tlsDir})
	require.ErrorContains(t, err, "--ca-dir: read CA certificate")
	other := t.TempDir()
	require.NoError(t, transport.CreateCA(other, "staging"))
	_, err = loadJoinCA(&Config{CADir: other, TLSDir: tlsDir})
	require.ErrorContains(t, err, `is the CA of cluster "staging", but this controller's certificate`)
	same := t.TempDir()
	require.NoError(t, transport.CreateCA(same, "prod"))
	_, err = loadJoinCA(&Config{CADir: same, TLSDir: tlsDir})
	require.ErrorContains(t, err, "is not among the CAs in --tls-dir")

	// Start refuses a bad --ca-dir before it opens anything.
	_, err = Start(Config{NodeID: 1, DataDir: filepath.Join(t.TempDir(), "data"), ClusterAddr: "127.0.0.1:0",
		Peers: map[uint64]string{1: "127.0.0.1:0"}, TLSDir: tlsDir, CADir: other, Logger: quiet})
	require.ErrorContains(t, err, "--ca-dir")
}
