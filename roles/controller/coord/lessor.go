// Package coord holds the controller-side halves of the coordination
// primitives: lease deadlines and keep-alives (Lessor, KeepAlive), the
// wait for a lock or an election (AwaitLock) and the watch hub (Hub). The
// lessor and the hub live only in memory; what they act on is replicated.
// The rules of locks, elections and services are metadata's state
// machine; the HTTP API only validates and routes.
package coord

import (
	"errors"
	"sync"
	"time"
)

// Lessor is the leader's in-memory view of lease deadlines (etcd's lessor):
// keep-alives only move a deadline here, nothing is committed. When a
// deadline passes, the leader commits OpLeaseRevoke with Expired set. A
// controller that gains leadership forgets every deadline, so each lease
// gets now + its full TTL: remaining TTLs are extended by at least the
// election time and never shortened.
type Lessor struct {
	mu       sync.Mutex
	primary  bool
	deadline map[int64]time.Time
	now      func() time.Time
}

// NewLessor returns a lessor that is not primary: it tracks nothing until
// SetPrimary(true).
func NewLessor() *Lessor {
	return &Lessor{deadline: map[int64]time.Time{}, now: time.Now}
}

// SetPrimary makes the lessor primary (this controller leads) or not, and
// forgets every deadline either way. It runs on the raft loop (a leader
// hook), so it must not block.
func (l *Lessor) SetPrimary(primary bool) {
	l.mu.Lock()
	l.primary = primary
	l.deadline = map[int64]time.Time{}
	l.mu.Unlock()
}

// Sync reconciles deadlines with the replicated leases (id → TTL in ms):
// new ones get now + TTL, gone ones are forgotten. It returns the expired
// ids (primary only).
func (l *Lessor) Sync(ttls map[int64]int64) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	now := l.now()
	var expired []int64
	for id, ttl := range ttls {
		d, ok := l.deadline[id]
		if !ok {
			l.deadline[id] = now.Add(time.Duration(ttl) * time.Millisecond)
			continue
		}
		if !now.Before(d) {
			expired = append(expired, id)
		}
	}
	for id := range l.deadline {
		if _, ok := ttls[id]; !ok {
			delete(l.deadline, id)
		}
	}
	return expired
}

var (
	// ErrLeaseExpiring answers a keep-alive that came after the lease's
	// deadline: its expiry may already be proposed, so it cannot be
	// extended.
	ErrLeaseExpiring = errors.New("lease expired; its revocation is being committed")
	// ErrNotPrimary means this lessor is not the primary: the controller
	// does not lead, and only the leader's deadlines count.
	ErrNotPrimary = errors.New("not the primary lessor: this controller is not the leader")
)

// Refresh extends lease id to at+ttl (never shortens it). It fails with
// ErrNotPrimary when this controller is not the primary lessor, and with
// ErrLeaseExpiring once the deadline passed: a keep-alive must never be
// acknowledged for a lease whose expiry may already be in the log.
func (l *Lessor) Refresh(id int64, ttl time.Duration, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return ErrNotPrimary
	}
	cur, ok := l.deadline[id]
	if ok && !l.now().Before(cur) {
		return ErrLeaseExpiring
	}
	if d := at.Add(ttl); d.After(cur) {
		l.deadline[id] = d
	}
	return nil
}

// Remaining returns the time left on lease id (of the given TTL) as the
// primary sees it; ok is false when this lessor is not the primary.
func (l *Lessor) Remaining(id int64, ttl time.Duration) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return 0, false
	}
	d, ok := l.deadline[id]
	if !ok {
		return ttl, true // granted since the last sync: a full TTL
	}
	return max(0, d.Sub(l.now())), true
}
