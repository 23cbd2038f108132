package controller

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
	"github.com/corral-dev/corral/transport"
)

// Join requests a controller serves: it is the one thing the cluster port
// does for a client without a certificate, so it is rate-limited before
// anything reaches raft.
const (
	// JoinRate and JoinBurst are the token bucket of join requests one
	// controller answers (more are refused with JoinRateLimited).
	JoinRate  = 10
	JoinBurst = 10
)

// tokenCreateHint ends the refusals that only a new token cures.
const tokenCreateHint = "create a new one with 'corral token create --role worker'"

// loadJoinCA loads --ca-dir, if set, and checks that it is the CA of this
// controller's cluster and one the cluster trusts: the certificates it
// signs must be accepted.
func loadJoinCA(cfg *Config) (*transport.CA, error) {
	if cfg.CADir == "" {
		return nil, nil
	}
	if cfg.TLSDir == "" {
		return nil, errors.New("--ca-dir needs --tls-dir: workers join on the QUIC cluster port")
	}
	ca, err := transport.LoadCA(cfg.CADir)
	if err != nil {
		return nil, fmt.Errorf("--ca-dir: %w", err)
	}
	own, err := transport.LoadTLSDir(cfg.TLSDir)
	if err != nil {
		return nil, fmt.Errorf("load TLS files: %w", err)
	}
	if ca.Cluster != own.Self.Cluster {
		return nil, fmt.Errorf("--ca-dir %s is the CA of cluster %q, but this controller's certificate (--tls-dir %s) names cluster %q: give the CA that issued the cluster's certificates",
			cfg.CADir, ca.Cluster, cfg.TLSDir, own.Self.Cluster)
	}
	if _, err := ca.Cert.Verify(x509.VerifyOptions{Roots: own.CA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("--ca-dir %s: its ca.pem is not among the CAs in --tls-dir %s, so the controllers would refuse the certificates it signs: give the cluster's CA",
			cfg.CADir, cfg.TLSDir)
	}
	return ca, nil
}

// joinServer answers workers' join requests: it spends a use of their
// token through raft (OpJoinTokenUse) and only then signs their
// certificate request with the CA.
type joinServer struct {
	node     uint64
	ca       *transport.CA // nil without --ca-dir: every request is refused
	propose  func(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error)
	timeout  time.Duration
	limit    *tokenBucket
	requests *prometheus.CounterVec
	log      *slog.Logger
	now      func() time.Time
}

func newJoinServer(node uint64, ca *transport.CA, timeout time.Duration, log *slog.Logger,
	propose func(context.Context, metadata.Op, any) (metadata.Result, error)) *joinServer {
	j := &joinServer{
		node: node, ca: ca, propose: propose, timeout: timeout, log: log, now: time.Now,
		limit: newTokenBucket(JoinRate, JoinBurst, time.Now()),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_join_requests_total",
			Help: "Worker join requests this controller answered, by result (ok, or why it was refused).",
		}, []string{"result"}),
	}
	for _, c := range transport.JoinCodes() {
		j.requests.WithLabelValues(c.String())
	}
	return j
}

// startJoin serves the join protocol on the cluster port.
func (c *Controller) startJoin(ca *transport.CA) {
	j := newJoinServer(c.cfg.NodeID, ca, c.cfg.RequestTimeout, c.log, c.r.ProposePayload)
	c.reg.MustRegister(j.requests)
	if !c.r.ServeJoin(j.serve) {
		return // an injected transport: no cluster port
	}
	if ca != nil {
		c.log.Info("signing joining workers' certificates", "ca_dir", c.cfg.CADir, "cluster", ca.Cluster)
	}
}

// serve is the transport.JoinHandler.
func (j *joinServer) serve(ctx context.Context, remote net.Addr, req transport.JoinRequest) transport.JoinAnswer {
	ans := j.answer(ctx, req)
	j.requests.WithLabelValues(ans.Code.String()).Inc()
	log := j.log.With("remote", remote.String(), "worker", printableID(req.Worker))
	switch ans.Code {
	case transport.JoinOK:
		log.Info("worker joined with a token: certificate signed")
	case transport.JoinRateLimited:
		log.Debug("join request refused", "result", ans.Code.String())
	default:
		log.Warn("join request refused", "result", ans.Code.String(), "reason", ans.Message)
	}
	return ans
}

func (j *joinServer) answer(ctx context.Context, req transport.JoinRequest) transport.JoinAnswer {
	if !j.limit.allow(j.now()) {
		return transport.Refuse(transport.JoinRateLimited,
			"controller %d answers at most %d join requests a second; retry shortly", j.node, JoinRate)
	}
	if j.ca == nil {
		return transport.Refuse(transport.JoinNoCA,
			"controller %d cannot sign certificates: it was started without --ca-dir (the directory with the cluster's ca.pem and ca-key.pem); "+
				"list a controller started with --ca-dir in the worker's --controllers, or issue the worker a certificate with 'corral certs issue'", j.node)
	}
	id, secret, err := metadata.ParseJoinToken(req.Token)
	if err != nil {
		return transport.Refuse(transport.JoinBadRequest, "%v", err)
	}
	if err := metadata.ValidateWorkerID(req.Worker); err != nil {
		return transport.Refuse(transport.JoinBadRequest, "%v", err)
	}
	csr, err := x509.ParseCertificateRequest(req.CSR)
	if err == nil {
		err = transport.CheckCSR(csr)
	}
	if err != nil {
		return transport.Refuse(transport.JoinBadRequest, "certificate request: %v", err)
	}
	keySum := sha256.Sum256(csr.RawSubjectPublicKeyInfo)
	use := metadata.JoinTokenUse{ID: id, SecretSHA256: metadata.JoinTokenSecretHash(secret), Worker: req.Worker,
		KeySHA256: hex.EncodeToString(keySum[:]), AtMS: j.now().UnixMilli()}
	pctx, cancel := context.WithTimeout(ctx, j.timeout)
	defer cancel()
	if _, err := j.propose(pctx, metadata.OpJoinTokenUse, use); err != nil {
		return j.refusal(id, err)
	}
	der, err := j.ca.Sign(csr, transport.RoleWorker, req.Worker, nil)
	if err != nil {
		return transport.Refuse(transport.JoinInternal,
			"controller %d could not sign the certificate: %v; retry (a retry with the same key spends no further use of the token)", j.node, err)
	}
	return transport.JoinAnswer{Cert: der}
}

// refusal words the state machine's (or raft's) refusal of a token use.
func (j *joinServer) refusal(id string, err error) transport.JoinAnswer {
	switch {
	case errors.Is(err, metadata.ErrJoinTokenUnknown):
		return transport.Refuse(transport.JoinTokenUnknown, "%v: %s", err, tokenCreateHint)
	case errors.Is(err, metadata.ErrJoinTokenSecret):
		return transport.Refuse(transport.JoinTokenWrongSecret,
			"wrong secret for join token %s: pass the whole token as 'corral token create' printed it, or %s", id, tokenCreateHint)
	case errors.Is(err, metadata.ErrJoinTokenExpired), errors.Is(err, metadata.ErrJoinTokenUsedUp):
		code := transport.JoinTokenExpired
		if errors.Is(err, metadata.ErrJoinTokenUsedUp) {
			code = transport.JoinTokenUsedUp
		}
		return transport.Refuse(code, "%v: %s", err, tokenCreateHint)
	case errors.Is(err, metadata.ErrJoinWorkerTaken), errors.Is(err, metadata.ErrJoinWorkerRevoked):
		return transport.Refuse(transport.JoinWorkerRefused,
			"%v: a join token cannot take over that id; start the worker with another --node-id (or none, to get a new one)", err)
	case errors.Is(err, metadata.ErrInvalid):
		return transport.Refuse(transport.JoinBadRequest, "%v", err)
	case errors.Is(err, fault.ErrTimeout):
		return transport.Refuse(transport.JoinUnavailable,
			"controller %d: %v; retry (a retry with the same key spends no further use of the token)", j.node, err)
	case errors.Is(err, fault.ErrNoLeader), errors.Is(err, fault.ErrStopped), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		return transport.Refuse(transport.JoinUnavailable, "controller %d: %v; retry", j.node, err)
	}
	return transport.Refuse(transport.JoinInternal, "controller %d: %v", j.node, err)
}

// printableID keeps whatever a client sent as a worker id fit for a log
// line.
func printableID(s string) string {
	if metadata.ValidateWorkerID(s) == nil {
		return s
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return fmt.Sprintf("%q", s)
}

// tokenBucket allows rate events a second on average, burst at once.
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(rate, burst int, now time.Time) *tokenBucket {
	return &tokenBucket{rate: float64(rate), burst: float64(burst), tokens: float64(burst), last: now}
}

// allow takes a token if there is one at now.
func (b *tokenBucket) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(b.burst, b.tokens+el*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
