package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/quic-go/quic-go"
)

// ALPNJoin is the protocol a new worker trades a join token for its
// certificate on, on the controllers' cluster port. It is the one protocol
// on which a controller does not ask for a client certificate (the worker
// has none yet): a ClientHello offering exactly ALPNJoin gets a TLS config
// without client authentication that can negotiate nothing else, and such
// a connection reaches only the join handler (HandleJoin), never raft, the
// peer API or worker sessions. The worker still checks the controller's
// certificate against the cluster CA it was given.
const ALPNJoin = "corral-join/1"

// Join protocol, version 1 (docs/ENCODING.md style). The worker opens one
// bidirectional stream and writes one request frame; the controller
// answers with one frame and both sides close:
//
//	frame:    length u32 big-endian (<= MaxJoinFrame) | payload
//	payload:  magic "CRJN" | version u8 (=1) | type u8 | fields
//	request   (type 1): token str | worker id str | CSR DER bytes
//	cert      (type 2): certificate DER bytes
//	refused   (type 3): code uvarint | message str
//
// str and bytes are uvarint-length-prefixed; a payload ends exactly after
// its fields. Decoders return errors on garbage and never panic
// (FuzzDecodeJoinRequest, FuzzDecodeJoinAnswer).
const (
	// MaxJoinFrame bounds one join frame either way.
	MaxJoinFrame = 16 << 10
	// JoinTimeout bounds a whole join exchange: the server's read
	// deadline, and how long a client waits for the answer.
	JoinTimeout = 10 * time.Second

	joinMagic      = "CRJN"
	joinVersion    = 1
	jtRequest      = 1
	jtCert         = 2
	jtRefused      = 3
	maxJoinToken   = 256
	maxJoinWorker  = 256
	maxJoinDER     = 8 << 10
	maxJoinMessage = 1024
	// maxJoinConns bounds the join connections a controller serves at
	// once; more are closed at once (errCodeJoinBusy).
	maxJoinConns    = 32
	errCodeJoinBusy = quic.ApplicationErrorCode(0x106)
)

// ErrBadJoinMessage is wrapped by every join decoding error.
var ErrBadJoinMessage = errors.New("bad join message")

// JoinRequest is what a worker sends: its join token, the worker id it
// wants and a certificate request (PKCS #10, DER) for its new key.
type JoinRequest struct {
	Token  string
	Worker string
	CSR    []byte
}

// JoinCode says why a join was refused.
type JoinCode uint8

// Join refusals.
const (
	JoinOK               JoinCode = 0
	JoinBadRequest       JoinCode = 1  // garbled request, bad worker id or CSR
	JoinTokenUnknown     JoinCode = 2  // no such token (revoked, long dead, never made)
	JoinTokenWrongSecret JoinCode = 3  // the token's secret is wrong
	JoinTokenExpired     JoinCode = 4  // the token's lifetime is over
	JoinTokenUsedUp      JoinCode = 5  // every use was spent
	JoinWorkerRefused    JoinCode = 6  // the worker id is revoked or belongs to a known worker
	JoinNoCA             JoinCode = 7  // this controller has no CA key (--ca-dir): ask another
	JoinRateLimited      JoinCode = 8  // too many join requests: retry shortly
	JoinUnavailable      JoinCode = 9  // no leader, or the outcome is unknown: retry
	JoinInternal         JoinCode = 10 // the controller failed
)

var joinCodeNames = map[JoinCode]string{
	JoinOK: "ok", JoinBadRequest: "bad_request", JoinTokenUnknown: "unknown_token",
	JoinTokenWrongSecret: "wrong_secret", JoinTokenExpired: "expired", JoinTokenUsedUp: "used_up",
	JoinWorkerRefused: "worker_refused", JoinNoCA: "no_ca", JoinRateLimited: "rate_limited",
	JoinUnavailable: "unavailable", JoinInternal: "internal",
}

// String is the code's name, as corral_join_requests_total{result} counts
// it.
func (c JoinCode) String() string {
	if s, ok := joinCodeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code_%d", uint8(c))
}

// JoinCodes lists every code, for pre-created metric series.
func JoinCodes() []JoinCode {
	out := make([]JoinCode, 0, len(joinCodeNames))
	for c := JoinOK; int(c) < len(joinCodeNames); c++ {
		out = append(out, c)
	}
	return out
}

// JoinAnswer is a controller's answer: the signed certificate (DER), or a
// refusal code with a message for the operator.
type JoinAnswer struct {
	Cert    []byte
	Code    JoinCode
	Message string
}

// Refuse is a refusal answer.
func Refuse(code JoinCode, format string, a ...any) JoinAnswer {
	return JoinAnswer{Code: code, Message: fmt.Sprintf(format, a...)}
}

// JoinError is a controller's refusal of a join, as the worker sees it.
type JoinError struct {
	Code    JoinCode
	Message string
}

// Error is the controller's message, which says what to do.
func (e *JoinError) Error() string { return e.Message }

// Retryable reports whether asking again (shortly, or another controller)
// may succeed: the token's own state did not refuse.
func (e *JoinError) Retryable() bool {
	return e.Code == JoinRateLimited || e.Code == JoinUnavailable || e.Code == JoinNoCA || e.Code == JoinInternal
}

// EncodeJoinRequest returns req as one frame.
func EncodeJoinRequest(req JoinRequest) ([]byte, error) {
	switch {
	case len(req.Token) > maxJoinToken:
		return nil, fmt.Errorf("join request: token of %d bytes exceeds %d", len(req.Token), maxJoinToken)
	case len(req.Worker) > maxJoinWorker:
		return nil, fmt.Errorf("join request: worker id of %d bytes exceeds %d", len(req.Worker), maxJoinWorker)
	case len(req.CSR) > maxJoinDER:
		return nil, fmt.Errorf("join request: certificate request of %d bytes exceeds %d", len(req.CSR), maxJoinDER)
	}
	b := joinHeader(jtRequest)
	b = appendStrings(b, req.Token, req.Worker, string(req.CSR))
	return joinFrame(b), nil
}

// EncodeJoinAnswer returns a as one frame: a certificate when a.Code is
// JoinOK, else a refusal (a longer message is cut).
func EncodeJoinAnswer(a JoinAnswer) ([]byte, error) {
	if a.Code == JoinOK {
		if len(a.Cert) == 0 || len(a.Cert) > maxJoinDER {
			return nil, fmt.Errorf("join answer: certificate of %d bytes (want 1 to %d)", len(a.Cert), maxJoinDER)
		}
		return joinFrame(appendStrings(joinHeader(jtCert), string(a.Cert))), nil
	}
	msg := a.Message
	if len(msg) > maxJoinMessage {
		msg = msg[:maxJoinMessage]
	}
	b := binary.AppendUvarint(joinHeader(jtRefused), uint64(a.Code))
	return joinFrame(appendStrings(b, msg)), nil
}

func joinHeader(typ byte) []byte {
	b := make([]byte, 4, 256)
	b = append(b, joinMagic...)
	return append(b, joinVersion, typ)
}

// joinFrame fills in the length prefix joinHeader left room for.
func joinFrame(b []byte) []byte {
	binary.BigEndian.PutUint32(b[:4], uint32(len(b)-4))
	return b
}

// DecodeJoinRequest decodes a request frame's payload.
func DecodeJoinRequest(p []byte) (JoinRequest, error) {
	d, err := joinPayload(p, jtRequest)
	if err != nil {
		return JoinRequest{}, err
	}
	req := JoinRequest{Token: d.strN(maxJoinToken), Worker: d.strN(maxJoinWorker), CSR: []byte(d.strN(maxJoinDER))}
	if err := d.end(); err != nil {
		return JoinRequest{}, err
	}
	return req, nil
}

// DecodeJoinAnswer decodes an answer frame's payload.
func DecodeJoinAnswer(p []byte) (JoinAnswer, error) {
	if len(p) < len(joinMagic)+2 {
		return JoinAnswer{}, fmt.Errorf("%w: truncated header", ErrBadJoinMessage)
	}
	typ := p[len(joinMagic)+1]
	d, err := joinPayload(p, typ)
	if err != nil {
		return JoinAnswer{}, err
	}
	var a JoinAnswer
	switch typ {
	case jtCert:
		a.Cert = []byte(d.strN(maxJoinDER))
		if d.err == nil && len(a.Cert) == 0 {
			d.fail("empty certificate")
		}
	case jtRefused:
		code := d.uvarint()
		if d.err == nil && (code == uint64(JoinOK) || code > 255) {
			d.fail(fmt.Sprintf("refusal code %d", code))
		}
		a.Code, a.Message = JoinCode(code), d.strN(maxJoinMessage)
	default:
		return JoinAnswer{}, fmt.Errorf("%w: unknown answer type %d", ErrBadJoinMessage, typ)
	}
	if err := d.end(); err != nil {
		return JoinAnswer{}, err
	}
	return a, nil
}

// joinPayload checks the header of a payload of type want.
func joinPayload(p []byte, want byte) (*wdecoder, error) {
	if len(p) < len(joinMagic)+2 {
		return nil, fmt.Errorf("%w: truncated header", ErrBadJoinMessage)
	}
	switch {
	case string(p[:len(joinMagic)]) != joinMagic:
		return nil, fmt.Errorf("%w: bad magic %q", ErrBadJoinMessage, p[:len(joinMagic)])
	case p[len(joinMagic)] != joinVersion:
		return nil, fmt.Errorf("%w: unsupported version %d", ErrBadJoinMessage, p[len(joinMagic)])
	case p[len(joinMagic)+1] != want:
		return nil, fmt.Errorf("%w: message type %d, want %d", ErrBadJoinMessage, p[len(joinMagic)+1], want)
	}
	return &wdecoder{b: p, off: len(joinMagic) + 2, bad: ErrBadJoinMessage}, nil
}

// readJoinFrame reads one frame's payload.
func readJoinFrame(r io.Reader) ([]byte, error) {
	p, err := readFrame(r, MaxJoinFrame, nil)
	if err != nil {
		return nil, fmt.Errorf("read join frame: %w", noEOF(err))
	}
	return p, nil
}

// JoinHandler answers one join request. remote is the client's address,
// for logs; nothing about the client is verified. ctx ends when the
// exchange times out or the transport closes.
type JoinHandler func(ctx context.Context, remote net.Addr, req JoinRequest) JoinAnswer

// HandleJoin serves ALPNJoin with h. Until it is called, a ClientHello
// that offers only ALPNJoin gets the ordinary configuration (a client
// certificate required) and no protocol in common.
func (q *QUIC) HandleJoin(h JoinHandler) {
	if h == nil {
		return
	}
	sem := make(chan struct{}, maxJoinConns)
	q.mu.Lock()
	q.alpn[ALPNJoin] = func(conn *quic.Conn) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		default:
			_ = conn.CloseWithError(errCodeJoinBusy, "too many join connections; retry shortly")
			return
		}
		q.serveJoin(conn, h)
	}
	q.mu.Unlock()
}

// joinConfig is the server configuration of a ClientHello that offers
// exactly ALPNJoin, when a join handler is registered: no client
// certificate, and ALPNJoin the only protocol it can negotiate. nil for
// any other hello.
func (q *QUIC) joinConfig(hello *tls.ClientHelloInfo) *tls.Config {
	if len(hello.SupportedProtos) != 1 || hello.SupportedProtos[0] != ALPNJoin {
		return nil
	}
	q.mu.RLock()
	_, ok := q.alpn[ALPNJoin]
	q.mu.RUnlock()
	if !ok {
		return nil
	}
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		GetCertificate:         q.cfg.TLS.getCertificate,
		ClientAuth:             tls.NoClientCert,
		NextProtos:             []string{ALPNJoin},
		SessionTicketsDisabled: true,
	}
}

// serveJoin runs one join exchange on conn: one stream, one request, one
// answer.
func (q *QUIC) serveJoin(conn *quic.Conn, h JoinHandler) {
	defer func() { _ = conn.CloseWithError(errCodeShutdown, "") }()
	if conn.ConnectionState().TLS.NegotiatedProtocol != ALPNJoin {
		return // never: the routing is by this protocol
	}
	ctx, cancel := context.WithTimeout(q.ctx, JoinTimeout)
	defer cancel()
	stop := context.AfterFunc(conn.Context(), cancel)
	defer stop()
	s, err := conn.AcceptStream(ctx)
	if err != nil {
		return
	}
	deadline := time.Now().Add(JoinTimeout)
	_ = s.SetReadDeadline(deadline)
	_ = s.SetWriteDeadline(deadline)
	var ans JoinAnswer
	p, err := readJoinFrame(s)
	if err == nil {
		var req JoinRequest
		if req, err = DecodeJoinRequest(p); err == nil {
			ans = h(ctx, conn.RemoteAddr(), req)
		}
	}
	if err != nil {
		if conn.Context().Err() != nil || q.ctx.Err() != nil {
			return
		}
		q.log.Debug("bad join request", "remote", conn.RemoteAddr(), "err", err)
		ans = Refuse(JoinBadRequest, "bad join request: %v", err)
	}
	out, err := EncodeJoinAnswer(ans)
	if err != nil {
		q.log.Error("cannot encode join answer", "err", err)
		out, _ = EncodeJoinAnswer(Refuse(JoinInternal, "the controller could not encode its answer"))
	}
	if _, err := s.Write(out); err != nil {
		return
	}
	_ = s.Close()
	// The client closes the connection once it has read the answer;
	// closing first could discard the answer in flight.
	<-ctx.Done()
}

// LoadTrustedCA returns a bundle that holds only the cluster CA of caFile
// (one or more PEM certificates) and no certificate of its own: what a
// worker that has not joined yet checks the controllers with. Its Self
// names only the cluster, which the CA certificates name
// (corral://<cluster>); they must all name the same one.
func LoadTrustedCA(caFile string) (*TLSBundle, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	cluster := ""
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse CA certificate %s: %w", caFile, err)
		}
		if !cert.IsCA {
			return nil, fmt.Errorf("CA certificate %s: %q is not a CA", caFile, cert.Subject.CommonName)
		}
		c, err := clusterOfCA(cert)
		if err != nil {
			return nil, fmt.Errorf("CA certificate %s: %w", caFile, err)
		}
		if cluster != "" && c != cluster {
			return nil, fmt.Errorf("CA certificate %s names clusters %q and %q: give the CA of one cluster", caFile, cluster, c)
		}
		cluster = c
		pool.AddCert(cert)
	}
	if cluster == "" {
		return nil, fmt.Errorf("parse CA certificate %s: no PEM certificate found", caFile)
	}
	return &TLSBundle{Self: Identity{Cluster: cluster}, CA: pool}, nil
}

// Join asks the controller at addr for a certificate: it dials ALPNJoin
// without a client certificate, checks that the server is a controller of
// trust's cluster (its certificate chains to trust's CA), sends req and
// returns the certificate (DER). A refusal is a *JoinError.
func Join(ctx context.Context, addr string, trust *TLSBundle, req JoinRequest) ([]byte, error) {
	frame, err := EncodeJoinRequest(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, JoinTimeout)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, trust.clientConfig(nil, 0, ALPNJoin), &quic.Config{
		HandshakeIdleTimeout: handshakeTimeout, MaxIdleTimeout: idleTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("join: dial controller %s: %w", addr, err)
	}
	defer func() { _ = conn.CloseWithError(errCodeShutdown, "") }()
	if p := conn.ConnectionState().TLS.NegotiatedProtocol; p != ALPNJoin {
		return nil, fmt.Errorf("join: controller %s speaks %q, not %s", addr, p, ALPNJoin)
	}
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, fmt.Errorf("join: open stream to %s: %w", addr, err)
	}
	deadline, _ := ctx.Deadline()
	_ = s.SetWriteDeadline(deadline)
	_ = s.SetReadDeadline(deadline)
	if _, err := s.Write(frame); err != nil {
		return nil, fmt.Errorf("join: send request to %s: %w", addr, err)
	}
	_ = s.Close()
	p, err := readJoinFrame(s)
	if err != nil {
		var ae *quic.ApplicationError
		if errors.As(err, &ae) && ae.ErrorCode == errCodeJoinBusy {
			return nil, &JoinError{Code: JoinRateLimited, Message: "controller " + addr + " is busy with other joins; retry shortly"}
		}
		return nil, fmt.Errorf("join: read answer from %s: %w", addr, err)
	}
	ans, err := DecodeJoinAnswer(p)
	if err != nil {
		return nil, fmt.Errorf("join: answer from %s: %w", addr, err)
	}
	if ans.Code != JoinOK {
		return nil, &JoinError{Code: ans.Code, Message: ans.Message}
	}
	return ans.Cert, nil
}

// WriteNodeFiles writes a TLS directory as LoadTLSDir reads it: caPEM as
// ca.pem, key as node-key.pem (0600) and certDER as node.pem, each
// atomically, node.pem last (its presence means the directory is
// complete). dir is created 0700 if needed.
func WriteNodeFiles(dir string, caPEM []byte, key *ecdsa.PrivateKey, certDER []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create TLS dir %s: %w", dir, err)
	}
	if err := writeFileAtomic(filepath.Join(dir, CAFile), caPEM, 0o644); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, NodeKeyFile), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, NodeFile), "CERTIFICATE", certDER, 0o644)
}

// writeFileAtomic is writePEM for bytes already encoded.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	return nil
}
