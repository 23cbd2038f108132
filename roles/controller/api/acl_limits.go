package api

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/corral-dev/corral/metadata"
)

// Per-token limits (Limits.MaxLeasesPerToken, MaxWatchesPerToken): one
// application's runaway client must not use up what the whole cluster
// may hold. While ACLs are off every caller is the same anonymous
// identity, which only the global limits (--max-leases, --max-watches)
// bound: a per-token limit would then cap the whole loopback cluster.

// Defaults of --max-leases-per-token and --max-watches-per-token.
const (
	DefaultMaxLeasesPerToken  = 10000
	DefaultMaxWatchesPerToken = 1000
)

// tokenCounts counts something open per token accessor id.
type tokenCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// take adds one for acc unless it has max already (max <= 0: no limit).
func (c *tokenCounts) take(acc string, max int) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if max > 0 && c.n[acc] >= max {
		return c.n[acc], false
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[acc]++
	return c.n[acc], true
}

// give returns one of acc's.
func (c *tokenCounts) give(acc string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[acc]--; c.n[acc] <= 0 {
		delete(c.n, acc)
	}
}

// takeWatch reserves one of the caller's watches; release gives it back.
func (s *Server) takeWatch(r *http.Request) (release func(), err error) {
	id := identity(r)
	max := s.cfg.Limits.MaxWatchesPerToken
	if id == anonymousIdentity {
		max = 0
	}
	if n, ok := s.watchesBy.take(id.AccessorID, max); !ok {
		return nil, &apiError{Status: http.StatusTooManyRequests, Code: "too_many_watches",
			Message: fmt.Sprintf("token %s (%s) has %d watches open on this controller, the limit (--max-watches-per-token %d): "+
				"close some, or watch one wider prefix instead of many keys", id.AccessorID, id.Name, n, max)}
	}
	return func() { s.watchesBy.give(id.AccessorID) }, nil
}

// admitLease checks the caller's live leases against the per-token limit.
func (s *Server) admitLease(r *http.Request) error {
	id := identity(r)
	max := s.cfg.Limits.MaxLeasesPerToken
	if max <= 0 || id == anonymousIdentity {
		return nil
	}
	if n := s.store.State().LeaseCountBy(id.AccessorID); n >= max {
		return &apiError{Status: http.StatusTooManyRequests, Code: "too_many_leases",
			Message: fmt.Sprintf("token %s (%s) holds %d live leases, the limit (--max-leases-per-token %d): revoke leases "+
				"(DELETE /v1/leases/ID) or let them expire, then grant again; one lease can carry many keys and locks",
				id.AccessorID, id.Name, n, max)}
	}
	return nil
}

// allowLeaseRevoke lets a token revoke the leases it granted; another
// token's lease needs coord write on every name (prefix ""), since
// revoking it ends that holder's locks and ephemeral keys.
func (s *Server) allowLeaseRevoke(r *http.Request, lease int64) error {
	if l, ok := s.store.State().Lease(lease); ok && l.Creator != identity(r).AccessorID {
		return allow(r, metadata.ACLCoord, metadata.ACLWrite, "")
	}
	return nil // its own lease, or none (the revoke answers lease_not_found)
}
