package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Coordination errors, matched with errors.Is.
var (
	// ErrLeaseNotFound: the lease does not exist any more (expired or revoked; HTTP 404, code "lease_not_found").
	ErrLeaseNotFound = errors.New("lease not found")
	// ErrLockBusy: the lock (or election) stayed held by someone else for the whole wait (HTTP 409, code
	// "lock_busy"). The caller is not queued.
	ErrLockBusy = errors.New("lock busy")
	// ErrCompacted: a watch asked for a revision older than the server's history window (HTTP 410, code
	// "compacted").
	ErrCompacted = errors.New("revision compacted")
	// ErrLimit: a documented limit was reached (HTTP 429, code "limit").
	ErrLimit = errors.New("limit reached")
	// ErrSessionLost: the session's lease expired or could not be kept alive within the doubt bound.
	ErrSessionLost = errors.New("session lost")
)

func init() {
	codeSentinels["lease_not_found"] = ErrLeaseNotFound
	codeSentinels["lock_busy"] = ErrLockBusy
	codeSentinels["compacted"] = ErrCompacted
	codeSentinels["limit"] = ErrLimit
}

// Lease is a lease as the server reports it.
type Lease struct {
	ID  int64
	TTL time.Duration
	// Remaining is the time left as the leader sees it (TimeToLive only).
	Remaining time.Duration
	// Keys and Locks attached to the lease (TimeToLive only).
	Keys, Locks []string
}

type wireLease struct {
	ID          int64    `json:"id"`
	TTLMS       int64    `json:"ttl_ms"`
	RemainingMS *int64   `json:"remaining_ms"`
	Keys        []string `json:"keys"`
	Locks       []string `json:"locks"`
}

func (w wireLease) lease() Lease {
	l := Lease{ID: w.ID, TTL: time.Duration(w.TTLMS) * time.Millisecond, Keys: w.Keys, Locks: w.Locks}
	if w.RemainingMS != nil {
		l.Remaining = time.Duration(*w.RemainingMS) * time.Millisecond
	}
	return l
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func leasePath(id int64) string { return "/v1/leases/" + strconv.FormatInt(id, 10) }

// Grant creates a lease with the given TTL (rounded to milliseconds; the server accepts 1s to 1h).
func (c *Client) Grant(ctx context.Context, ttl time.Duration) (Lease, error) {
	var out wireLease
	err := c.do(ctx, call{method: http.MethodPost, path: "/v1/leases", body: jsonBody(map[string]string{"ttl": ttl.String()})}, &out)
	if err != nil {
		return Lease{}, err
	}
	return out.lease(), nil
}

// KeepAliveOnce refreshes a lease to a full TTL (counted from before the call).
func (c *Client) KeepAliveOnce(ctx context.Context, id int64) error {
	return c.do(ctx, call{method: http.MethodPost, path: leasePath(id) + "/keepalive", body: []byte{}}, nil)
}

// KeepAliveMany refreshes up to 4096 leases in one call and returns the ids that no longer exist.
func (c *Client) KeepAliveMany(ctx context.Context, ids []int64) (notFound []int64, err error) {
	var out struct {
		NotFound []int64 `json:"not_found"`
	}
	if err := c.do(ctx, call{method: http.MethodPost, path: "/v1/leases/keepalive", body: jsonBody(map[string][]int64{"ids": ids})}, &out); err != nil {
		return nil, err
	}
	return out.NotFound, nil
}

// Revoke ends a lease at once: its keys are deleted and its locks released.
func (c *Client) Revoke(ctx context.Context, id int64) error {
	return c.do(ctx, call{method: http.MethodDelete, path: leasePath(id)}, nil)
}

// TimeToLive returns the lease with its remaining TTL and attached keys and locks.
func (c *Client) TimeToLive(ctx context.Context, id int64) (Lease, error) {
	var out wireLease
	if err := c.do(ctx, call{method: http.MethodGet, path: leasePath(id)}, &out); err != nil {
		return Lease{}, err
	}
	return out.lease(), nil
}

// Leases lists the live leases by id with their TTLs, keys and locks
// (Remaining is not set: only TimeToLive asks the leader for it), reading
// every page.
func (c *Client) Leases(ctx context.Context) ([]Lease, error) {
	var all []Lease
	var after int64
	for {
		var out struct {
			Leases []wireLease `json:"leases"`
			More   bool        `json:"more"`
		}
		path := "/v1/leases?after=" + strconv.FormatInt(after, 10)
		if err := c.do(ctx, call{method: http.MethodGet, path: path}, &out); err != nil {
			return nil, err
		}
		for _, l := range out.Leases {
			all = append(all, l.lease())
		}
		if !out.More || len(out.Leases) == 0 {
			return all, nil
		}
		after = out.Leases[len(out.Leases)-1].ID
	}
}

// PutWithLease sets an ephemeral key: it is deleted when the lease ends.
func (c *Client) PutWithLease(ctx context.Context, key string, value []byte, lease int64) (int64, error) {
	if value == nil {
		value = []byte{}
	}
	var out struct {
		Revision int64 `json:"revision"`
	}
	q := url.Values{"lease": {strconv.FormatInt(lease, 10)}}
	if err := c.do(ctx, call{method: http.MethodPut, path: keyPath(key), query: q, body: value}, &out); err != nil {
		return 0, err
	}
	return out.Revision, nil
}

// SessionOption configures NewSession.
type SessionOption func(*sessionOptions)

type sessionOptions struct {
	doubt time.Duration
}

// WithDoubtAfter sets how long the session may go without a confirmed keep-alive before Done closes (default: half
// the TTL). After that, the lease may expire on the server before the client learns it, so work guarded by it must
// stop.
func WithDoubtAfter(d time.Duration) SessionOption {
	return func(o *sessionOptions) { o.doubt = d }
}

// Session is a lease kept alive in the background. Done closes when the session is in doubt: the lease was found
// gone, or no keep-alive was confirmed within the doubt bound. A session in doubt never recovers; make a new one.
type Session struct {
	c      *Client
	lease  Lease
	doubt  time.Duration
	done   chan struct{}
	cancel context.CancelFunc
	once   sync.Once
	mu     sync.Mutex
	err    error
	wg     sync.WaitGroup
}

// NewSession grants a lease with ttl and keeps it alive until Close or until it is lost.
func (c *Client) NewSession(ctx context.Context, ttl time.Duration, opts ...SessionOption) (*Session, error) {
	o := sessionOptions{doubt: ttl / 2}
	for _, opt := range opts {
		opt(&o)
	}
	if o.doubt <= 0 || o.doubt > ttl {
		return nil, fmt.Errorf("client: session doubt bound %s must be in (0, ttl=%s]", o.doubt, ttl)
	}
	l, err := c.Grant(ctx, ttl)
	if err != nil {
		return nil, fmt.Errorf("grant session lease: %w", err)
	}
	kctx, cancel := context.WithCancel(context.Background())
	s := &Session{c: c, lease: l, doubt: o.doubt, done: make(chan struct{}), cancel: cancel}
	s.wg.Add(1)
	go s.keepAlive(kctx, time.Now())
	return s, nil
}

// LeaseID is the session's lease.
func (s *Session) LeaseID() int64 { return s.lease.ID }

// TTL is the lease's TTL.
func (s *Session) TTL() time.Duration { return s.lease.TTL }

// Done closes when the session is in doubt or closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why Done closed (nil while open).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Session) lose(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	})
}

func (s *Session) keepAlive(ctx context.Context, confirmed time.Time) {
	defer s.wg.Done()
	interval := max(s.lease.TTL/3, 50*time.Millisecond)
	if d := s.doubt / 3; d < interval {
		interval = max(d, 20*time.Millisecond)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		deadline := confirmed.Add(s.doubt)
		if !time.Now().Before(deadline) {
			s.lose(fmt.Errorf("%w: no keep-alive confirmed for %s", ErrSessionLost, s.doubt))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		// One attempt may take at most two intervals, so a controller that
		// hangs (paused, partitioned) leaves time to try another.
		attempt := sent.Add(2 * interval)
		if deadline.Before(attempt) {
			attempt = deadline
		}
		cctx, cancel := context.WithDeadline(ctx, attempt)
		err := s.c.KeepAliveOnce(cctx, s.lease.ID)
		cancel()
		switch {
		case err == nil:
			confirmed = sent
		case errors.Is(err, ErrLeaseNotFound):
			s.lose(fmt.Errorf("%w: lease %d expired or was revoked", ErrSessionLost, s.lease.ID))
			return
		case ctx.Err() != nil:
			return
		default:
			// Keep-alives are idempotent: start the next one elsewhere.
			s.c.preferred.Add(1)
		}
	}
}

// Close stops the keep-alives and revokes the lease (its keys and locks end now).
func (s *Session) Close(ctx context.Context) error {
	s.cancel()
	s.wg.Wait()
	s.lose(fmt.Errorf("%w: session closed", ErrSessionLost))
	err := s.c.Revoke(ctx, s.lease.ID)
	if errors.Is(err, ErrLeaseNotFound) {
		return nil
	}
	return err
}

// doStream sends cl to the endpoints in turn without the client's per-call timeout (long polls and streams) and
// returns the first 2xx response; the caller closes its body.
func (c *Client) doStream(ctx context.Context, cl call) (*http.Response, error) {
	n := len(c.endpoints)
	start := int(c.preferred.Load()) % n
	var lastErr error
	for i := 0; i < n; i++ {
		idx := (start + i) % n
		u := c.endpoints[idx] + cl.path
		if len(cl.query) > 0 {
			u += "?" + cl.query.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, cl.method, u, bytes.NewReader(cl.body))
		if err != nil {
			return nil, fmt.Errorf("build request %s %s: %w", cl.method, u, err)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s %s: %w", cl.method, u, ctx.Err())
			}
			lastErr = fmt.Errorf("%s %s: %w", cl.method, u, err)
			if isDialError(err) {
				continue
			}
			return nil, lastErr
		}
		if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			c.answered(idx, c.leaderEndpoint(resp))
			return resp, nil
		}
		err = decodeError(resp)
		resp.Body.Close()
		var ae *Error
		if errors.As(err, &ae) && ae.retryElsewhere() {
			lastErr = err
			continue
		}
		return nil, err
	}
	return nil, lastErr
}
