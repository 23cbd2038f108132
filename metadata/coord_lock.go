package metadata

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Locks and elections: a lock is a key under SystemPrefix held by one lease,
// with a FIFO queue of waiting leases. The holder and the queue are
// replicated state, so a failover neither drops nor reorders them.

func validLockKey(k string) bool {
	return strings.HasPrefix(k, SystemPrefix) && len(k) > len(SystemPrefix)
}

// lockPayload decodes a lock op's payload and checks its key; when either
// is bad, ok is false and bad is the refusal to return.
func (s *State) lockPayload(c *Command, verb string) (p LockPayload, bad Result, ok bool) {
	if err := decodePayload(c, &p); err != nil {
		return p, s.invalid("%v", err), false
	}
	if !validLockKey(c.Key) {
		return p, s.invalid("lock %s: key %q is not under %q", verb, c.Key, SystemPrefix), false
	}
	return p, Result{}, true
}

func (s *State) applyLockAcquire(c *Command) Result {
	p, bad, ok := s.lockPayload(c, "acquire")
	if !ok {
		return bad
	}
	l := s.ext.Leases[p.Lease]
	if l == nil {
		return Result{Revision: s.revision, Err: fmt.Errorf("lock %q: lease %d: %w", c.Key, p.Lease, ErrLeaseNotFound)}
	}
	lk := s.ext.Locks[c.Key]
	if lk != nil {
		if st, ok := lk.status(p.Lease); ok {
			return Result{Revision: s.revision, Out: st} // already holding or queued
		}
	}
	if lk != nil && lk.Holder != nil && p.NoWait {
		return Result{Revision: s.revision, Out: LockStatus{Holder: cloneOwner(lk.Holder)}}
	}
	if lk != nil && len(lk.Waiters) >= MaxLockWaiters {
		return Result{Revision: s.revision, Err: fmt.Errorf("lock %q: %w (limit %d)", c.Key, ErrTooManyWaiters, MaxLockWaiters)}
	}
	if lk == nil {
		lk = &Lock{Key: c.Key}
		if s.ext.Locks == nil {
			s.ext.Locks = map[string]*Lock{}
		}
		s.ext.Locks[c.Key] = lk
	}
	lk.Waiters = append(lk.Waiters, LockOwner{Lease: p.Lease, Owner: p.Owner})
	l.Locks = insertSorted(l.Locks, c.Key)
	var res Result
	s.grantNext(lk, &res)
	st, _ := lk.status(p.Lease)
	res.Revision, res.Out = s.revision, st
	return res
}

func (s *State) applyLockRelease(c *Command) Result {
	p, bad, ok := s.lockPayload(c, "release")
	if !ok {
		return bad
	}
	var res Result
	s.lockRemove(c.Key, p.Lease, p.WaitingOnly, &res)
	var st LockStatus
	if lk := s.ext.Locks[c.Key]; lk != nil {
		st, _ = lk.status(p.Lease)
		st.Holder = cloneOwner(lk.Holder)
	}
	res.Revision, res.Out = s.revision, st
	return res
}

// lockRemove takes lease off lock key: out of the queue, and (unless
// waitingOnly) out of the holder seat, granting the next waiter.
func (s *State) lockRemove(key string, lease int64, waitingOnly bool, res *Result) {
	lk := s.ext.Locks[key]
	if lk == nil {
		return
	}
	removed := false
	for i, w := range lk.Waiters {
		if w.Lease == lease {
			lk.Waiters = append(lk.Waiters[:i], lk.Waiters[i+1:]...)
			removed = true
			break
		}
	}
	if !waitingOnly && lk.Holder != nil && lk.Holder.Lease == lease {
		lk.Holder = nil
		s.deleteItem(key, lease, res)
		removed = true
	}
	if removed {
		if l := s.ext.Leases[lease]; l != nil {
			l.Locks = removeSorted(l.Locks, key)
		}
	}
	s.grantNext(lk, res)
}

// grantNext gives a free lock to the first waiter whose lease is alive
// (present in the state): the holder key is written, and its revision is
// the fencing token. A lock with no holder and no waiters is dropped.
func (s *State) grantNext(lk *Lock, res *Result) {
	for lk.Holder == nil && len(lk.Waiters) > 0 {
		w := lk.Waiters[0]
		lk.Waiters = lk.Waiters[1:]
		if s.ext.Leases[w.Lease] == nil {
			continue // cannot happen: revoke removes waiters; kept as a guard
		}
		cur, exists := s.kvs.Get(item{key: lk.Key})
		val, _ := json.Marshal(LockOwner{Lease: w.Lease, Owner: w.Owner, Token: s.revision + 1})
		s.putItem(lk.Key, val, cur, exists, w.Lease, res)
		w.Token = s.revision
		lk.Holder = &w
	}
	if len(lk.Waiters) == 0 {
		lk.Waiters = nil
	}
	if lk.Holder == nil {
		delete(s.ext.Locks, lk.Key)
		if len(s.ext.Locks) == 0 {
			s.ext.Locks = nil
		}
	}
}

func (lk *Lock) status(lease int64) (LockStatus, bool) {
	if lk.Holder != nil && lk.Holder.Lease == lease {
		return LockStatus{Held: true, Token: lk.Holder.Token, Holder: cloneOwner(lk.Holder)}, true
	}
	for i, w := range lk.Waiters {
		if w.Lease == lease {
			return LockStatus{Position: i + 1, Holder: cloneOwner(lk.Holder)}, true
		}
	}
	return LockStatus{Holder: cloneOwner(lk.Holder)}, false
}

func cloneOwner(o *LockOwner) *LockOwner {
	if o == nil {
		return nil
	}
	c := *o
	return &c
}

// LockState returns a copy of lock key's holder and queue; ok is false when
// the lock is free and nobody waits.
func (s *State) LockState(key string) (Lock, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	lk, ok := s.ext.Locks[key]
	if !ok {
		return Lock{Key: key}, false
	}
	return Lock{Key: lk.Key, Holder: cloneOwner(lk.Holder), Waiters: append([]LockOwner(nil), lk.Waiters...)}, true
}

// LockCounts returns how many locks (and elections) are held and how many
// owners wait for one.
func (s *State) LockCounts() (held, waiting int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, lk := range s.ext.Locks {
		if lk.Holder != nil {
			held++
		}
		waiting += len(lk.Waiters)
	}
	return held, waiting
}
