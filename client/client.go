// Package client is a Go client for the corral HTTP API (see docs and the `corral kv` commands).
//
// It depends only on the standard library so that programs embedding it do not pull in raft, Pebble or QUIC.
// A Client is safe for concurrent use by many goroutines.
//
// Failover: the client keeps a list of controller endpoints and starts every call at the last endpoint that
// answered. It moves on to the next endpoint only when that is known to be safe, i.e. when nothing can have been
// proposed: the connection could not be established (dial error), or the controller answered 503 with code
// "no_leader" or "not_ready" (or "acl_changed": a write refused because access control changed after it was
// authorized, which took no effect). A 503 "timeout" is returned to the caller (ErrTimeout) because the write may still
// commit; retrying it blindly could apply it twice.
//
// Leader hint: a follower names the leader's API address in every answer (LeaderHeader). When that address is one
// of the configured endpoints, the next calls start there, so writes skip the follower's forwarding hop. The hint
// only moves where the next call starts; it never resends a call.
//
// KV stream: Put, CompareAndPut, Get and Delete travel as binary frames over one long-lived connection per endpoint
// (GET /v1/kvstream, upgraded), shared by every goroutine of the Client, many calls in flight at once; the rules
// above hold for them as for HTTP calls. Config.HTTPOnly sends them as HTTP requests instead, and an endpoint that
// does not serve the stream gets HTTP by itself. Close a Client that is done with: its streams hold connections.
//
// Transport: unless Config.HTTPClient is set, every other call is one HTTP/1.1 round trip done by the calling
// goroutine over a pool of keep-alive connections per endpoint, which costs a third less client CPU than net/http's
// Transport under many concurrent callers (see directTransport). A pooled connection the server has closed is
// noticed before it is used, so no call is lost to a connection that died while idle.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// ErrBadCACert is returned by New when Config.CACert holds no PEM certificate.
var ErrBadCACert = errors.New("client: CACert holds no PEM certificate")

// DefaultTimeout is used when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

const (
	// maxResponseBytes bounds a successful answer: a prefix listing of many 1 MiB values can be large, but a
	// misbehaving server must not make the client allocate without limit.
	maxResponseBytes = 1 << 30
	// maxErrorBytes bounds how much of an error answer is read (JSON errors are tiny; HTML error pages are not).
	maxErrorBytes = 64 << 10
)

// ClientHeader is sent with every request, its value naming the client (ClientName): the API refuses a
// state-changing request that carries neither it nor a JSON body, because a web page can make a browser send such a
// request to any address, while it cannot add a custom header across origins without a CORS preflight the API never
// grants (docs/API.md, "Browser safety").
const ClientHeader = "X-Corral-Client"

// ClientName is ClientHeader's value.
const ClientName = "corral-go"

// LeaderHeader is the answer header in which a follower names the leader's API address (HOST:PORT).
const LeaderHeader = "X-Corral-Leader"

// Config configures a Client.
type Config struct {
	// Endpoints are the controllers' HTTP API base URLs, e.g. "http://127.0.0.1:8080". A missing scheme means
	// http://. At least one is required.
	Endpoints []string
	// Token is sent as "Authorization: Bearer <Token>" when non-empty.
	Token string
	// Timeout bounds each call (all failover attempts of one Put/Get/... together). 0 means DefaultTimeout;
	// negative means no timeout beyond the caller's context.
	Timeout time.Duration
	// HTTPClient is used for all requests. nil means a client that does not follow redirects, since a redirect could
	// silently change the key a write goes to.
	HTTPClient *http.Client
	// CACert is PEM: the certificate authorities https:// endpoints must chain to (the controllers'
	// --http-tls-cert issuer, e.g. the cluster's ca.pem). Empty means the system's roots. Ignored with HTTPClient.
	CACert []byte
	// HTTPOnly sends every call as an HTTP request. Without it, Put, CompareAndPut, Get and Delete travel as
	// binary frames over one long-lived connection per endpoint, shared by every goroutine of the Client (docs/API.md,
	// "KV stream"): less CPU on both sides and many calls per read and write. Their answers, errors and failover are
	// those of the HTTP calls, and an endpoint that does not serve the stream (an older controller) gets HTTP. With
	// HTTPClient set, every call is HTTP too. Close the Client when done with it.
	HTTPOnly bool
}

// Client talks to a corral cluster over its HTTP API.
type Client struct {
	endpoints []string
	// hosts are the endpoints' HOST:PORT, lower case, to match LeaderHeader against.
	hosts   []string
	token   string
	timeout time.Duration
	hc      *http.Client
	// preferred is the index of the leader a follower named (LeaderHeader), else of the last endpoint that
	// answered; calls start there so that a healthy endpoint is not re-discovered on every call.
	preferred atomic.Int64
	// streams carries KV calls unless Config.HTTPOnly or Config.HTTPClient is set (kvstream.go); nil then.
	streams *streamPool
}

// New validates cfg and returns a Client. It does not contact the cluster.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("client: no endpoints configured (want e.g. http://127.0.0.1:8080)")
	}
	c := &Client{token: cfg.Token, timeout: cfg.Timeout, hc: cfg.HTTPClient}
	for _, ep := range cfg.Endpoints {
		n, err := normalizeEndpoint(ep)
		if err != nil {
			return nil, err
		}
		c.endpoints = append(c.endpoints, n)
		c.hosts = append(c.hosts, endpointHost(n))
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if len(cfg.CACert) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(cfg.CACert) {
				return nil, ErrBadCACert
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		// Many goroutines usually share one Client against a handful of controllers; the default of 2 idle
		// connections per host would make most requests dial anew.
		tr.MaxIdleConnsPerHost = maxIdlePerHost
		if !cfg.HTTPOnly {
			c.streams = newStreamPool(cfg.Token, tr.TLSClientConfig, c.endpoints, tr.Proxy)
		}
		var rt http.RoundTripper = tr
		if directSupported {
			rt = newDirectTransport(tr)
		}
		c.hc = &http.Client{
			Transport: rt,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	// Every request, streams and long polls included, carries ClientHeader.
	hc := *c.hc
	hc.Transport = clientHeaderTransport{base: hc.Transport}
	c.hc = &hc
	return c, nil
}

// clientHeaderTransport adds ClientHeader to the requests that lack it.
type clientHeaderTransport struct{ base http.RoundTripper }

func (t clientHeaderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Header.Get(ClientHeader) == "" {
		req = req.Clone(req.Context()) // a RoundTripper must not change its request
		req.Header.Set(ClientHeader, ClientName)
	}
	return base.RoundTrip(req)
}

// Close closes the Client's KV streams and idle connections. Calls in flight on a stream fail; a later call opens
// what it needs again.
func (c *Client) Close() error {
	if c.streams != nil {
		c.streams.closeAll()
	}
	c.hc.CloseIdleConnections()
	return nil
}

// Endpoints returns the normalized endpoint list, in configuration order.
func (c *Client) Endpoints() []string {
	return append([]string(nil), c.endpoints...)
}

func normalizeEndpoint(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("client: empty endpoint (want e.g. http://127.0.0.1:8080)")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("client: endpoint %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("client: endpoint %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return "", fmt.Errorf("client: endpoint %q: missing host", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("client: endpoint %q: must not contain user info, a query or a fragment", s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// endpointHost is a normalized endpoint's HOST:PORT, with the scheme's default port made explicit, in lower case.
func endpointHost(ep string) string {
	u, err := url.Parse(ep)
	if err != nil {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

// leaderEndpoint is the index of the endpoint resp names as the leader, or -1 when it names none of them.
func (c *Client) leaderEndpoint(resp *http.Response) int {
	return c.hintedEndpoint(resp.Header.Get(LeaderHeader))
}

// hintedEndpoint is the index of the endpoint a leader hint (HOST:PORT) names, or -1 when it names none of them.
func (c *Client) hintedEndpoint(hint string) int {
	if hint == "" || len(hint) > 300 {
		return -1
	}
	hint = strings.ToLower(hint)
	for i, h := range c.hosts {
		if h == hint {
			return i
		}
	}
	return -1
}

// answered records that endpoint idx answered; leader is the endpoint it named as the leader (-1: none). The next
// calls start at the leader when the client knows it, else where this one succeeded.
func (c *Client) answered(idx, leader int) {
	if leader >= 0 {
		idx = leader
	}
	c.preferred.Store(int64(idx))
}

// call is one API request; it may be sent to several endpoints, so the body is kept as bytes.
type call struct {
	method string
	path   string // already escaped, starting with "/"
	query  url.Values
	body   []byte
	// raw, when set, consumes a 2xx body instead of JSON decoding (e.g.
	// snapshot downloads).
	raw func(io.Reader) error
	// contentType of body; default application/octet-stream.
	contentType string
	// stream, when set, is the call as a KV stream frame, sent instead of the request when the Client streams.
	stream *streamCall
}

// do runs cl against the endpoints with failover and decodes a 2xx JSON answer into out (if non-nil).
func (c *Client) do(ctx context.Context, cl call, out any) error {
	parent := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	// Rounds over the endpoints: when every endpoint answered "no leader
	// (yet)", an election is probably under way, so try again shortly
	// until the deadline instead of failing at once.
	backoff := 50 * time.Millisecond
	for {
		err, again := c.round(ctx, parent, cl, out)
		if !again || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

// round tries every endpoint once. again reports that all of them answered
// with a retryable "no leader" kind of error.
func (c *Client) round(ctx, parent context.Context, cl call, out any) (err error, again bool) {
	n := len(c.endpoints)
	start := int(c.preferred.Load()) % n
	var lastErr error
	var tried []string
	allLeaderless := true
	for i := 0; i < n; i++ {
		idx := (start + i) % n
		ep := c.endpoints[idx]
		leader, err := c.attempt(ctx, idx, cl, out)
		if err == nil {
			c.answered(idx, leader)
			return nil, false
		}
		var apiErr *Error
		switch {
		case errors.As(err, &apiErr):
			if !apiErr.retryElsewhere() {
				// The endpoint is healthy; the answer (404, 409, timeout, ...) is the caller's to handle.
				c.answered(idx, leader)
				return err, false
			}
		case ctx.Err() != nil:
			return c.contextError(parent, cl, ep, err), false
		case isDialError(err):
			err = fmt.Errorf("connect to %s: %w", ep, err)
			allLeaderless = false
		default:
			// The request may have reached the server (e.g. connection reset mid-request): the outcome is
			// unknown, so do not resend it elsewhere.
			return fmt.Errorf("%s %s%s: %w", cl.method, ep, cl.path, err), false
		}
		lastErr = err
		tried = append(tried, ep)
	}
	if len(tried) == 1 {
		return lastErr, allLeaderless
	}
	return fmt.Errorf("no endpoint could serve the request (tried %s): %w", strings.Join(tried, ", "), lastErr), allLeaderless
}

// contextError explains a transport error that happened because a context ended.
func (c *Client) contextError(parent context.Context, cl call, ep string, err error) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("%s %s%s: %w", cl.method, ep, cl.path, perr)
	}
	// Our own per-call timeout fired. For a write the outcome is unknown, exactly like a server-side timeout.
	return fmt.Errorf("%s %s%s: no answer within %s, outcome unknown: %w (%w)",
		cl.method, ep, cl.path, c.timeout, ErrTimeout, err)
}

// attempt sends cl to endpoint idx. leader is the endpoint the answer named as the leader (-1: none or no answer).
func (c *Client) attempt(ctx context.Context, idx int, cl call, out any) (leader int, err error) {
	if cl.stream != nil && c.streams != nil && cl.stream.fits() {
		if leader, err, handled := c.streamAttempt(ctx, idx, cl); handled {
			return leader, err
		}
	}
	leader = -1
	ep := c.endpoints[idx]
	resp, err := c.send(ctx, ep, cl)
	if err != nil {
		return leader, err
	}
	leader = c.leaderEndpoint(resp)
	defer func() {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return leader, decodeError(resp)
	}
	if cl.raw != nil {
		return leader, cl.raw(resp.Body)
	}
	if out == nil {
		return leader, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(out); err != nil {
		return leader, fmt.Errorf("decode answer to %s %s%s: %w", cl.method, ep, cl.path, err)
	}
	return leader, nil
}

// send builds cl for endpoint ep and sends it; the caller closes the answer's body.
func (c *Client) send(ctx context.Context, ep string, cl call) (*http.Response, error) {
	u := ep + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build request %s %s: %w", cl.method, u, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(ClientHeader, ClientName)
	if body != nil {
		ct := cl.contentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.hc.Do(req)
}

// decodeError turns a non-2xx answer into an *Error, tolerating bodies that are not corral JSON.
func decodeError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	return decodeErrorBody(resp.StatusCode, raw)
}

// decodeErrorBody is decodeError for an answer's status and body, however it came (HTTP or the KV stream).
func decodeErrorBody(status int, raw []byte) error {
	if len(raw) > maxErrorBytes {
		raw = raw[:maxErrorBytes]
	}
	e := &Error{Status: status}
	var body struct {
		Error       string       `json:"error"`
		Code        string       `json:"code"`
		ModRevision int64        `json:"mod_revision"`
		Fields      []FieldError `json:"fields"`
		Permission  *Permission  `json:"permission"`
	}
	if json.Unmarshal(raw, &body) == nil && (body.Code != "" || body.Error != "") {
		e.Code, e.Message, e.ModRevision, e.Fields = body.Code, body.Error, body.ModRevision, body.Fields
		e.Permission = body.Permission
		return e
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	e.Message = msg
	return e
}

// isDialError reports whether err happened while establishing the connection, i.e. before any byte of the request
// was sent, which makes trying another endpoint safe.
func isDialError(err error) bool {
	var op *net.OpError
	var ns streamNotSent
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &ns)
}
