package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// directTransport is the Client's default http.RoundTripper: HTTP/1.1 over
// pooled keep-alive connections, each round trip done by the calling
// goroutine. net/http's Transport hands every request to two goroutines
// per connection (one writes, one reads) and back; with many concurrent
// callers those hand-offs cost more CPU than the request itself. Measured
// at 128 clients on 3 controllers: 80-87 µs of client CPU per put with
// net/http, 42-47 µs this way (docs/PERFORMANCE.md, "A client without
// hand-offs"). The wire format is net/http's own (Request.Write,
// ReadResponse), so the server sees the same requests.
//
// Requests it does not take go to fallback unchanged: a body that cannot be
// replayed (a stream, such as the lease keep-alive stream, which writes
// while it reads), a proxy from the environment, or a scheme other than
// http and https.
type directTransport struct {
	fallback *http.Transport
	dialer   net.Dialer

	mu   sync.Mutex
	idle map[string][]*directConn // by scheme://host:port, newest last
}

const (
	// maxIdlePerHost is also the fallback's MaxIdleConnsPerHost (client.New).
	maxIdlePerHost = 64
	// idleExpiry drops a pooled connection unused for this long, well under
	// the API's own idle timeout (2 minutes), like net/http's 90 s.
	idleExpiry = 90 * time.Second
	// tlsHandshakeTimeout is net/http's default: a call without a deadline
	// still cannot hang on a server that never finishes the handshake.
	tlsHandshakeTimeout = 10 * time.Second
)

// aLongTimeAgo is a deadline in the past: setting it makes a blocked read or write return at once.
var aLongTimeAgo = time.Unix(1, 0)

// directConn is one keep-alive connection.
type directConn struct {
	conn   net.Conn // TLS or TCP
	raw    net.Conn // the TCP connection under conn, which alive probes
	br     *bufio.Reader
	w      connWriter // under bw
	bw     *bufio.Writer
	idleAt time.Time
}

// connWriter keeps the connection's last write error: net/http reports a
// failed write inside a body's copy as an error reading the body, and
// only the connection's own failure means the server may have answered.
type connWriter struct {
	conn net.Conn
	err  error
}

func (w *connWriter) Write(p []byte) (int, error) {
	n, err := w.conn.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

func newDirectTransport(fallback *http.Transport) *directTransport {
	return &directTransport{
		fallback: fallback,
		dialer:   net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		idle:     map[string][]*directConn{},
	}
}

// takes reports whether RoundTrip handles req itself rather than the fallback.
func (t *directTransport) takes(req *http.Request) bool {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if t.fallback.Proxy != nil {
		if u, err := t.fallback.Proxy(req); err != nil || u != nil {
			return false
		}
	}
	return true
}

// RoundTrip implements http.RoundTripper.
func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.takes(req) {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	key := req.URL.Scheme + "://" + canonicalAddr(req.URL.Scheme, req.URL.Host)
	for attempt := 0; ; attempt++ {
		dc, reused, err := t.get(ctx, key, req)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := t.exchange(ctx, key, dc, req)
		if err == nil {
			return resp, nil
		}
		var nw nothingWritten
		if attempt == 0 && reused && errors.As(err, &nw) && ctx.Err() == nil {
			// A pooled connection the server had closed: no whole request
			// reached it, so it is safe to send again, once.
			if req, err = rewound(req); err == nil {
				continue
			}
		}
		closeBody(req)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w (%w)", req.Method, req.URL.Redacted(), ctx.Err(), err)
		}
		return nil, err
	}
}

// nothingWritten marks an error raised before the whole request was
// written: the server cannot act on a request it did not get whole (the
// API reads a body to its end before acting on it).
type nothingWritten struct{ error }

func (e nothingWritten) Unwrap() error { return e.error }

// rewound is req with a fresh copy of its body, for a second attempt.
func rewound(req *http.Request) (*http.Request, error) {
	if req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// exchange writes req on dc, a connection to key, and reads the answer's head. The connection
// stays the response body's until that body is read to its end (then it
// goes back to the pool) or closed early (then it is closed).
func (t *directTransport) exchange(ctx context.Context, key string, dc *directConn, req *http.Request) (*http.Response, error) {
	// The context governs the whole exchange, body included, as with
	// net/http: when it ends, a blocked read or write returns at once.
	stop := context.AfterFunc(ctx, func() { _ = dc.conn.SetDeadline(aLongTimeAgo) })
	dc.w.err = nil
	err := req.Write(dc.bw)
	if err == nil {
		err = dc.bw.Flush()
	}
	if err != nil {
		// The server closed before it read the whole request. It may have
		// answered first (a body over its limit): that answer is the
		// caller's, as net/http gives it. Otherwise nothing acted on it.
		var resp *http.Response
		rerr := err
		if dc.w.err != nil { // the connection's error, not the body's
			resp, rerr = earlyAnswer(dc, req)
		}
		if rerr != nil {
			stop()
			_ = dc.conn.Close()
			return nil, nothingWritten{err}
		}
		return t.hold(resp, key, dc, stop, false), nil
	}
	resp, err := http.ReadResponse(dc.br, req)
	if err != nil {
		stop()
		_ = dc.conn.Close()
		return nil, err
	}
	return t.hold(resp, key, dc, stop, !resp.Close), nil
}

// earlyAnswerWait bounds the wait for an answer the server may have sent
// before it stopped reading a request.
const earlyAnswerWait = time.Second

// earlyAnswer reads an answer already sent on a connection whose request
// could not be written whole.
func earlyAnswer(dc *directConn, req *http.Request) (*http.Response, error) {
	if err := dc.conn.SetReadDeadline(time.Now().Add(earlyAnswerWait)); err != nil {
		return nil, err
	}
	return http.ReadResponse(dc.br, req)
}

// hold makes resp's body the owner of dc until it is read or closed; the
// connection goes back to the pool after a complete body if reusable.
func (t *directTransport) hold(resp *http.Response, key string, dc *directConn, stop func() bool, reusable bool) *http.Response {
	b := &directBody{body: resp.Body, t: t, dc: dc, key: key, stop: stop, reusable: reusable}
	if resp.Body == http.NoBody {
		b.finish(true)
		return resp
	}
	resp.Body = b
	return resp
}

// directBody hands its connection back when the body has been read to its end.
type directBody struct {
	body     io.ReadCloser
	t        *directTransport
	dc       *directConn
	key      string
	stop     func() bool
	reusable bool

	mu   sync.Mutex
	done bool
}

func (b *directBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err != nil {
		b.finish(errors.Is(err, io.EOF))
	}
	return n, err
}

// Close releases the connection; before the end of the body that means
// closing it, since the rest of the answer is still on the wire.
func (b *directBody) Close() error {
	b.finish(false)
	return nil
}

func (b *directBody) finish(atEOF bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	// stop fails when the context ended first: the connection's deadline
	// is then in the past, and it cannot be pooled.
	// Bytes past the answer's end belong to no request: such a
	// connection is closed rather than pooled.
	if b.stop() && atEOF && b.reusable && b.dc.br.Buffered() == 0 {
		b.t.put(b.key, b.dc)
		return
	}
	_ = b.dc.conn.Close()
}

// get takes a pooled connection to key that is still open, or dials one.
func (t *directTransport) get(ctx context.Context, key string, req *http.Request) (*directConn, bool, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		pool := t.idle[key]
		if len(pool) == 0 {
			t.mu.Unlock()
			break
		}
		dc := pool[len(pool)-1]
		pool[len(pool)-1] = nil
		t.idle[key] = pool[:len(pool)-1]
		t.mu.Unlock()
		if now.Sub(dc.idleAt) < idleExpiry && alive(dc.raw) {
			return dc, true, nil
		}
		_ = dc.conn.Close()
	}
	dc, err := t.dial(ctx, req)
	return dc, false, err
}

// put pools dc for the next request to key, unless the pool is full.
func (t *directTransport) put(key string, dc *directConn) {
	dc.idleAt = time.Now()
	t.mu.Lock()
	if len(t.idle[key]) < maxIdlePerHost {
		t.idle[key] = append(t.idle[key], dc)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = dc.conn.Close()
}

// dial opens a connection for req (TLS for https). Its errors are the
// dialer's *net.OpError (Op "dial"), which the Client takes as "nothing
// was sent, try the next endpoint".
func (t *directTransport) dial(ctx context.Context, req *http.Request) (*directConn, error) {
	conn, raw, err := dialAPI(ctx, &t.dialer, req.URL, t.fallback.TLSClientConfig)
	if err != nil {
		return nil, err
	}
	dc := &directConn{conn: conn, raw: raw, br: bufio.NewReaderSize(conn, 4096)}
	dc.w.conn = conn
	dc.bw = bufio.NewWriterSize(&dc.w, 4096)
	return dc, nil
}

// dialAPI opens an HTTP/1.1 connection to u's host: TCP, and TLS for https
// with base (Config.CACert; nil: the system's roots). raw is the TCP
// connection under conn. Dial errors are the dialer's *net.OpError (Op
// "dial"), which the Client takes as "nothing was sent, try the next
// endpoint".
func dialAPI(ctx context.Context, d *net.Dialer, u *url.URL, base *tls.Config) (conn, raw net.Conn, err error) {
	addr := canonicalAddr(u.Scheme, u.Host)
	raw, err = d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if u.Scheme != "https" {
		return raw, raw, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		cfg = base.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(raw, cfg)
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	err = tc.HandshakeContext(hctx)
	cancel()
	if err != nil {
		_ = raw.Close()
		return nil, nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, raw, nil
}

// CloseIdleConnections closes the pooled connections (http.Client.CloseIdleConnections calls it).
func (t *directTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*directConn{}
	t.mu.Unlock()
	for _, pool := range idle {
		for _, dc := range pool {
			_ = dc.conn.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}

// canonicalAddr is host:port with the scheme's default port made explicit.
func canonicalAddr(scheme, host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(trimBrackets(host), "443")
	}
	return net.JoinHostPort(trimBrackets(host), "80")
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}
