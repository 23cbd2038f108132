package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Coordination ops (30-49): leases, ephemeral keys and locks. Their payload
// is a JSON document in Command.Value. Only decisions are committed: lease
// keep-alives live in the leader's memory, and a lease's expiry is decided
// by the leader and committed as OpLeaseRevoke.
const (
	// OpLeaseGrant creates a lease; the id is the next value of a counter in
	// the state, returned in Result.Out as LeaseGrant.
	OpLeaseGrant Op = 30
	// OpLeaseRevoke ends leases (explicit revoke or leader-decided expiry):
	// their locks are released and their keys deleted in the same apply.
	OpLeaseRevoke Op = 31
	// OpPutLease is a put whose key is attached to a lease (ephemeral key).
	// Key and the compare-and-set fields are those of the command; Value
	// holds a PutLeasePayload.
	OpPutLease Op = 32
	// OpLockAcquire queues a lease on a lock (Key: the lock's key); the
	// state machine grants the head waiter. Result.Out is a LockStatus.
	OpLockAcquire Op = 33
	// OpLockRelease releases a lock held by a lease or removes the lease
	// from the lock's queue. Result.Out is a LockStatus.
	OpLockRelease Op = 34
	// OpDeleteSystem deletes a key under ServicePrefix (a service instance
	// deregistering). Value is an empty JSON object.
	OpDeleteSystem Op = 35
)

// ServicePrefix holds service registry instances (name/instance).
const ServicePrefix = SystemPrefix + "services/"

func (s *State) applyDeleteSystem(c *Command) Result {
	if !strings.HasPrefix(c.Key, ServicePrefix) || len(c.Key) == len(ServicePrefix) {
		return s.invalid("delete system key %q: only keys under %q", c.Key, ServicePrefix)
	}
	res := Result{}
	if _, ok := s.kvs.Get(item{key: c.Key}); ok {
		s.deleteItem(c.Key, s.ext.KeyLeases[c.Key], &res)
		s.detachLease(c.Key)
		res.Deleted = 1
	}
	res.Revision = s.revision
	return res
}

// Limits enforced by apply (and, earlier, by the API).
const (
	// MinLeaseTTLMS and MaxLeaseTTLMS bound a lease's TTL.
	MinLeaseTTLMS = 1000
	MaxLeaseTTLMS = 3600 * 1000
	// MaxLeases bounds the number of live leases.
	MaxLeases = 100000
	// MaxLockWaiters bounds a lock's queue.
	MaxLockWaiters = 10000
	// SystemPrefix is reserved for keys the state machine writes (lock and
	// election holders, service instances). The API refuses plain puts and
	// deletes of such keys (apply does not: OpPut and OpDelete keep their
	// meaning for logs written before the reservation).
	SystemPrefix = "_corral/"
)

var (
	// ErrLeaseNotFound reports a lease id that does not exist (never
	// granted, revoked or expired).
	ErrLeaseNotFound = errors.New("lease not found")
	// ErrTooManyLeases reports a grant beyond MaxLeases.
	ErrTooManyLeases = errors.New("too many leases")
	// ErrTooManyWaiters reports a lock acquire beyond MaxLockWaiters.
	ErrTooManyWaiters = errors.New("too many lock waiters")
)

// Lease is a session: keys and locks attached to it end with it.
type Lease struct {
	ID    int64 `json:"id"`
	TTLMS int64 `json:"ttl_ms"`
	// Keys are the ephemeral keys attached to the lease, sorted.
	Keys []string `json:"keys,omitempty"`
	// Locks are the lock keys the lease holds or waits on, sorted.
	Locks []string `json:"locks,omitempty"`
	// Creator is the accessor id of the API token that granted the lease
	// (ACLIdentity.AccessorID), for the per-token lease limit.
	Creator string `json:"creator,omitempty"`
	// SecretHash is LeaseGrantPayload.SecretHash (ZooKeeper sessions).
	SecretHash string `json:"secret_hash,omitempty"`
	// ZKConn is the connection that last resumed this ZooKeeper session
	// (OpZNodeBindSession), 0 if none did; writes from any other are
	// refused (znode_session.go).
	ZKConn uint64 `json:"zk_conn,omitempty"`
}

func (l *Lease) clone() Lease {
	c := *l
	c.Keys = append([]string(nil), l.Keys...)
	c.Locks = append([]string(nil), l.Locks...)
	return c
}

// LockOwner is a lease holding or waiting on a lock.
type LockOwner struct {
	Lease int64  `json:"lease"`
	Owner string `json:"owner,omitempty"`
	// Token is the fencing token of a holder (0 for a waiter): the store
	// revision of the grant, so tokens of a lock only ever grow.
	Token int64 `json:"fencing_token,omitempty"`
}

// Lock is a lock with its holder and FIFO queue. A lock with neither is
// removed from the state.
type Lock struct {
	Key     string      `json:"key"`
	Holder  *LockOwner  `json:"holder,omitempty"`
	Waiters []LockOwner `json:"waiters,omitempty"`
}

// LeaseGrantPayload is the payload of OpLeaseGrant.
type LeaseGrantPayload struct {
	TTLMS int64 `json:"ttl_ms"`
	// Creator names the granting token (Lease.Creator); "" when unknown.
	Creator string `json:"creator,omitempty"`
	// SecretHash, when set, is the hex SHA-256 of a secret the lease's
	// holder must show to resume it (a ZooKeeper session's password).
	// Only the hash is replicated, so snapshots and backups hold no secret.
	SecretHash string `json:"secret_hash,omitempty"`
}

// LeaseGrant is Result.Out of OpLeaseGrant.
type LeaseGrant struct {
	ID    int64 `json:"id"`
	TTLMS int64 `json:"ttl_ms"`
}

// LeaseRevokePayload is the payload of OpLeaseRevoke. With Expired, ids
// that no longer exist are skipped; otherwise exactly one id is named and a
// missing one is ErrLeaseNotFound.
type LeaseRevokePayload struct {
	IDs     []int64 `json:"ids"`
	Expired bool    `json:"expired,omitempty"`
}

// PutLeasePayload is the payload of OpPutLease.
type PutLeasePayload struct {
	Value []byte `json:"value"`
	Lease int64  `json:"lease"`
	// System allows a key under SystemPrefix (set only by the controller's
	// own handlers, never from a client's key).
	System bool `json:"system,omitempty"`
}

// LockPayload is the payload of OpLockAcquire and OpLockRelease.
type LockPayload struct {
	Lease int64  `json:"lease"`
	Owner string `json:"owner,omitempty"`
	// NoWait (acquire): grant now or fail, never queue.
	NoWait bool `json:"no_wait,omitempty"`
	// WaitingOnly (release): only leave the queue; a lease that holds the
	// lock keeps it. Used when a waiting client gives up, so that a grant
	// committed just before is reported rather than silently undone.
	WaitingOnly bool `json:"waiting_only,omitempty"`
}

// LockStatus is Result.Out of lock ops: whether the lease holds the lock
// after the op, its token, and otherwise its position in the queue
// (1 = next), 0 when not queued.
type LockStatus struct {
	Held     bool       `json:"held"`
	Token    int64      `json:"fencing_token,omitempty"`
	Position int        `json:"position,omitempty"`
	Holder   *LockOwner `json:"holder,omitempty"`
}

// EventType is the kind of a watch event.
type EventType string

// Watch event types.
const (
	EventPut    EventType = "put"
	EventDelete EventType = "delete"
)

// Event is one change to the key space, in revision order. Apply returns
// them in Result.Events; every event has its own revision (ModRevision).
type Event struct {
	Type           EventType
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64 // the revision of this change (for deletes too)
	Version        int64
	Lease          int64
}

// NewCoordCommand builds a coordination command with a JSON payload.
func NewCoordCommand(op Op, key string, payload any) (*Command, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", op, err)
	}
	return &Command{Op: op, Key: key, Value: b}, nil
}

func decodePayload(c *Command, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(c.Value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %s payload: %w", c.Op, err)
	}
	return nil
}

func insertSorted(s []string, v string) []string {
	i := sort.SearchStrings(s, v)
	if i < len(s) && s[i] == v {
		return s
	}
	s = append(s, "")
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func removeSorted(s []string, v string) []string {
	i := sort.SearchStrings(s, v)
	if i < len(s) && s[i] == v {
		return append(s[:i], s[i+1:]...)
	}
	return s
}

func (s *State) applyLeaseGrant(c *Command) Result {
	var p LeaseGrantPayload
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if p.TTLMS < MinLeaseTTLMS || p.TTLMS > MaxLeaseTTLMS {
		return s.invalid("lease grant: ttl %dms outside [%d, %d]ms", p.TTLMS, MinLeaseTTLMS, MaxLeaseTTLMS)
	}
	if len(s.ext.Leases) >= MaxLeases {
		return Result{Revision: s.revision, Err: fmt.Errorf("lease grant: %w (limit %d)", ErrTooManyLeases, MaxLeases)}
	}
	if p.SecretHash != "" && !isHexSHA256(p.SecretHash) {
		return s.invalid("lease grant: secret_hash is not a hex SHA-256")
	}
	if len(p.Creator) > 64 {
		return s.invalid("lease grant: creator longer than 64 bytes")
	}
	s.ext.LeaseNextID++
	id := s.ext.LeaseNextID
	if s.ext.Leases == nil {
		s.ext.Leases = map[int64]*Lease{}
	}
	s.ext.Leases[id] = &Lease{ID: id, TTLMS: p.TTLMS, Creator: p.Creator, SecretHash: p.SecretHash}
	s.ext.countLease(p.Creator, 1)
	return Result{Revision: s.revision, Out: LeaseGrant{ID: id, TTLMS: p.TTLMS}}
}

func (s *State) applyLeaseRevoke(c *Command) Result {
	var p LeaseRevokePayload
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if !p.Expired {
		if len(p.IDs) != 1 {
			return s.invalid("lease revoke: name exactly one lease, got %d", len(p.IDs))
		}
		if s.ext.Leases[p.IDs[0]] == nil {
			return Result{Revision: s.revision, Err: fmt.Errorf("lease %d: %w", p.IDs[0], ErrLeaseNotFound)}
		}
	}
	var res Result
	for _, id := range p.IDs {
		s.revokeLease(id, &res)
	}
	res.Revision = s.revision
	return res
}

// revokeLease ends lease id: releases or leaves its locks (granting their
// next waiters), deletes its keys, and removes it. Events go to res.
func (s *State) revokeLease(id int64, res *Result) {
	l := s.ext.Leases[id]
	if l == nil {
		return
	}
	for _, lk := range append([]string(nil), l.Locks...) {
		s.lockRemove(lk, id, false, res)
	}
	for _, k := range l.Keys {
		s.deleteItem(k, id, res)
		delete(s.ext.KeyLeases, k)
	}
	// A ZooKeeper session is a lease: its end takes its ephemeral znodes,
	// at the same log position on every replica. The error cannot happen
	// (the index holds only childless nodes) and revoking stays total.
	_, _ = s.deleteEphemerals(id, res)
	delete(s.ext.Leases, id)
	s.ext.countLease(l.Creator, -1)
	if len(s.ext.Leases) == 0 {
		s.ext.Leases = nil
	}
	if len(s.ext.KeyLeases) == 0 {
		s.ext.KeyLeases = nil
	}
}

// detachLease forgets key's lease (a plain put or a delete of an ephemeral
// key). The caller holds s.mu.
func (s *State) detachLease(key string) {
	id, ok := s.ext.KeyLeases[key]
	if !ok {
		return
	}
	delete(s.ext.KeyLeases, key)
	if len(s.ext.KeyLeases) == 0 {
		s.ext.KeyLeases = nil
	}
	if l := s.ext.Leases[id]; l != nil {
		l.Keys = removeSorted(l.Keys, key)
	}
}

func (s *State) applyPutLease(c *Command) Result {
	var p PutLeasePayload
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if c.Key == "" {
		return s.invalid("put: empty key")
	}
	if strings.HasPrefix(c.Key, SystemPrefix) && !p.System {
		return s.invalid("put %q: keys under %q are reserved", c.Key, SystemPrefix)
	}
	l := s.ext.Leases[p.Lease]
	if l == nil {
		return Result{Revision: s.revision, Err: fmt.Errorf("put %q with lease %d: %w", c.Key, p.Lease, ErrLeaseNotFound)}
	}
	cur, exists := s.kvs.Get(item{key: c.Key})
	if res, ok := s.compare(c, cur, exists); !ok {
		return res
	}
	var res Result
	s.putItem(c.Key, p.Value, cur, exists, p.Lease, &res)
	s.detachLease(c.Key)
	if s.ext.KeyLeases == nil {
		s.ext.KeyLeases = map[string]int64{}
	}
	s.ext.KeyLeases[c.Key] = p.Lease
	l.Keys = insertSorted(l.Keys, c.Key)
	res.Revision = s.revision
	return res
}

// putItem stores value under key (revision+1) and records the event.
func (s *State) putItem(key string, value []byte, cur item, exists bool, lease int64, res *Result) {
	s.revision++
	it := item{key: key, value: value, create: s.revision, mod: s.revision, version: 1}
	if exists {
		it.create = cur.create
		it.version = cur.version + 1
		s.kvBytes -= itemBytes(cur)
	}
	s.kvs.Set(it)
	s.kvBytes += itemBytes(it)
	res.Events = append(res.Events, Event{Type: EventPut, Key: key, Value: value,
		CreateRevision: it.create, ModRevision: it.mod, Version: it.version, Lease: lease})
}

// deleteItem removes key (revision+1) if present and records the event.
func (s *State) deleteItem(key string, lease int64, res *Result) {
	cur, ok := s.kvs.Get(item{key: key})
	if !ok {
		return
	}
	s.revision++
	s.kvs.Delete(cur)
	s.kvBytes -= itemBytes(cur)
	res.Events = append(res.Events, Event{Type: EventDelete, Key: key, ModRevision: s.revision, Lease: lease})
}

// Lease returns a copy of lease id.
func (s *State) Lease(id int64) (Lease, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l, ok := s.ext.Leases[id]
	if !ok {
		return Lease{}, false
	}
	return l.clone(), true
}

// Leases returns up to limit live leases with ids above after, by id,
// and whether more remain.
func (s *State) Leases(after int64, limit int) ([]Lease, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]int64, 0, len(s.ext.Leases))
	for id := range s.ext.Leases {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	more := len(ids) > limit
	if more {
		ids = ids[:limit]
	}
	out := make([]Lease, len(ids))
	for i, id := range ids {
		out[i] = s.ext.Leases[id].clone()
	}
	return out, more
}

// LeaseTTLs returns every live lease's TTL in milliseconds, by id.
func (s *State) LeaseTTLs() map[int64]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[int64]int64, len(s.ext.Leases))
	for id, l := range s.ext.Leases {
		out[id] = l.TTLMS
	}
	return out
}

// LeaseCount returns the number of live leases.
func (s *State) LeaseCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.ext.Leases)
}

// LeaseCountBy returns how many live leases the token with accessor id
// creator granted.
func (s *State) LeaseCountBy(creator string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ext.leasesBy[creator]
}

// countLease adds d to creator's live lease count (leasesBy).
func (e *extState) countLease(creator string, d int) {
	if creator == "" {
		return
	}
	if e.leasesBy == nil {
		e.leasesBy = map[string]int{}
	}
	if e.leasesBy[creator] += d; e.leasesBy[creator] <= 0 {
		delete(e.leasesBy, creator)
	}
}

// KeyLease returns the lease a key is attached to (0 if none).
func (s *State) KeyLease(key string) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ext.KeyLeases[key]
}

// checkCoord validates the coordination state of a decoded snapshot.
func (e *extState) checkCoord() error {
	for id, l := range e.Leases {
		if l == nil || l.ID != id || id <= 0 || id > e.LeaseNextID {
			return corrupt("lease %d: bad record", id)
		}
	}
	for k, id := range e.KeyLeases {
		if e.Leases[id] == nil {
			return corrupt("key %q: attached to missing lease %d", k, id)
		}
	}
	for k, lk := range e.Locks {
		if lk == nil || lk.Key != k {
			return corrupt("lock %q: bad record", k)
		}
	}
	return nil
}

// isHexSHA256 reports whether h is 64 lower-case hex digits.
func isHexSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
