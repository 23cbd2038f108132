package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// maxServerWait is the longest ?wait= the server accepts.
const maxServerWait = 60 * time.Second

// Lock is a distributed lock held through a Session. Tokens of a lock only ever grow: pass Token to every resource
// the lock protects and have it refuse smaller tokens (fencing), because a holder whose session is in doubt may
// already have lost the lock.
type Lock struct {
	s     *Session
	name  string
	kind  string // "locks" or "elections"
	id    string
	token int64
}

// NewLock returns the lock name for session s; nothing is sent until Lock.
func (s *Session) NewLock(name string) *Lock { return &Lock{s: s, name: name, kind: "locks"} }

// Lock blocks until the lock is granted (first come, first served), ctx ends, or the session is lost. It returns
// the fencing token. Each server-side wait lasts at most 60s; a longer wait re-queues at the back.
func (l *Lock) Lock(ctx context.Context) (int64, error) {
	return l.acquire(ctx, true)
}

// TryLock takes the lock only if it is free; ErrLockBusy otherwise.
func (l *Lock) TryLock(ctx context.Context) (int64, error) {
	return l.acquire(ctx, false)
}

func (l *Lock) path() string {
	if l.kind == "elections" {
		return "/v1/elections/" + url.PathEscape(l.name)
	}
	return "/v1/locks/" + url.PathEscape(l.name)
}

func (l *Lock) acquire(ctx context.Context, block bool) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-l.s.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := 50 * time.Millisecond
	for {
		wait := time.Duration(0)
		if block {
			wait = maxServerWait
			if dl, ok := ctx.Deadline(); ok {
				wait = min(wait, time.Until(dl)-50*time.Millisecond)
			}
			wait = max(wait, time.Millisecond)
		}
		q := url.Values{"lease": {strconv.FormatInt(l.s.LeaseID(), 10)}, "wait": {wait.String()}}
		if l.id != "" {
			q.Set("id", l.id)
		}
		p := l.path()
		if l.kind == "elections" {
			p += "/campaign"
		}
		resp, err := l.s.c.doStream(ctx, call{method: http.MethodPost, path: p, query: q})
		if err == nil {
			var out struct {
				Token int64 `json:"fencing_token"`
			}
			err = json.NewDecoder(io.LimitReader(resp.Body, maxErrorBytes)).Decode(&out)
			resp.Body.Close()
			if err != nil {
				return 0, fmt.Errorf("decode lock answer: %w", err)
			}
			l.token = out.Token
			return out.Token, nil
		}
		if sErr := l.s.Err(); sErr != nil {
			return 0, sErr
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("acquire %s %q: %w", l.kind, l.name, ctx.Err())
		}
		var ae *Error
		switch {
		case errors.Is(err, ErrLockBusy) && block:
			continue
		case errors.As(err, &ae) && (ae.Status == http.StatusServiceUnavailable):
			// No leader or outcome unknown: acquiring again with the same lease is idempotent.
		case errors.As(err, &ae):
			return 0, fmt.Errorf("acquire %s %q: %w", l.kind, l.name, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("acquire %s %q: %w (last error: %w)", l.kind, l.name, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// Token is the fencing token of the last successful Lock (0 before).
func (l *Lock) Token() int64 { return l.token }

// Done closes when the session holding the lock is in doubt: stop acting on the lock.
func (l *Lock) Done() <-chan struct{} { return l.s.Done() }

// Unlock releases the lock (or leaves its queue).
func (l *Lock) Unlock(ctx context.Context) error {
	q := url.Values{"lease": {strconv.FormatInt(l.s.LeaseID(), 10)}}
	p := l.path()
	method := http.MethodDelete
	if l.kind == "elections" {
		p, method = p+"/resign", http.MethodPost
	}
	return l.s.c.do(ctx, call{method: method, path: p, query: q, body: []byte{}}, nil)
}

// Election lets one candidate at a time lead; the leader's epoch is its fencing token.
type Election struct{ l *Lock }

// NewElection returns the election name for session s.
func (s *Session) NewElection(name string) *Election {
	return &Election{l: &Lock{s: s, name: name, kind: "elections"}}
}

// Campaign blocks until this candidate (identity id) leads, and returns its epoch.
func (e *Election) Campaign(ctx context.Context, id string) (int64, error) {
	e.l.id = id
	return e.l.acquire(ctx, true)
}

// Resign gives up leadership (or candidacy).
func (e *Election) Resign(ctx context.Context) error { return e.l.Unlock(ctx) }

// Epoch is the epoch won by the last Campaign.
func (e *Election) Epoch() int64 { return e.l.token }

// Done closes when the session is in doubt: stop acting as leader.
func (e *Election) Done() <-chan struct{} { return e.l.Done() }

// LeaderInfo is an election's current leader.
type LeaderInfo struct {
	Name    string `json:"name"`
	Leader  string `json:"leader"` // "" when nobody leads
	Epoch   int64  `json:"epoch"`
	Lease   int64  `json:"lease"`
	Waiters int    `json:"waiters"`
}

// Leader returns the election's leader (linearizable).
func (c *Client) Leader(ctx context.Context, election string) (LeaderInfo, error) {
	var out LeaderInfo
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/elections/" + url.PathEscape(election)}, &out)
	return out, err
}

// LockInfo is a lock's holder and queue.
type LockInfo struct {
	Name         string `json:"name"`
	Held         bool   `json:"held"`
	FencingToken int64  `json:"fencing_token"`
	Lease        int64  `json:"lease"`
	Owner        string `json:"owner"`
	Waiters      []struct {
		Lease int64  `json:"lease"`
		Owner string `json:"owner"`
	} `json:"waiters"`
}

// LockInfo returns a lock's holder and queue (linearizable).
func (c *Client) LockInfo(ctx context.Context, name string) (LockInfo, error) {
	var out LockInfo
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/locks/" + url.PathEscape(name)}, &out)
	return out, err
}

// ServiceInstance is one registered instance of a service.
type ServiceInstance struct {
	Instance    string            `json:"instance"`
	Address     string            `json:"address,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Lease       int64             `json:"lease,omitempty"`
	ModRevision int64             `json:"mod_revision,omitempty"`
	// Worker is the worker registry's record for instances of "corral-worker".
	Worker json.RawMessage `json:"worker,omitempty"`
}

// Register registers instance of service name at address, alive as long as lease.
func (c *Client) Register(ctx context.Context, name, instance, address string, metadata map[string]string, lease int64) (int64, error) {
	var out struct {
		Revision int64 `json:"revision"`
	}
	q := url.Values{"lease": {strconv.FormatInt(lease, 10)}}
	body := jsonBody(map[string]any{"address": address, "metadata": metadata})
	err := c.do(ctx, call{method: http.MethodPut, path: servicePath(name, instance), query: q, body: body}, &out)
	return out.Revision, err
}

// Deregister removes an instance now.
func (c *Client) Deregister(ctx context.Context, name, instance string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: servicePath(name, instance)}, nil)
}

// Instances lists the live instances of a service (linearizable) and the revision it was read at.
func (c *Client) Instances(ctx context.Context, name string) ([]ServiceInstance, int64, error) {
	var out struct {
		Instances []ServiceInstance `json:"instances"`
		Revision  int64             `json:"revision"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/services/" + url.PathEscape(name)}, &out)
	return out.Instances, out.Revision, err
}

func servicePath(name, instance string) string {
	return "/v1/services/" + url.PathEscape(name) + "/" + url.PathEscape(instance)
}
