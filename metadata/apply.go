package metadata

import "fmt"

// Apply applies the raft log entry at index with payload data and returns the
// proposer's request id (0 if unknown) and the outcome.
//
//   - index <= AppliedIndex(): nothing happens; the result carries
//     ErrAlreadyApplied and id 0 (the entry's effects are already in the
//     state, so no waiter should be told anything new). Gaps are allowed,
//     e.g. for conf-change entries the controller does not pass in.
//   - empty data (raft's empty leader entry): only the applied index
//     advances. Pass nil for conf-change entries to record their index.
//   - undecodable data: the applied index advances, nothing else changes,
//     and res.Err says why. An error wrapping ErrUnknownOp or
//     ErrUnsupportedVersion means the log was written by a newer corral; the
//     controller should stop applying rather than diverge.
//
// Apply is deterministic: it reads nothing but the state and its arguments.
// It does not check a command's proposal term: see ApplyEntry, which every
// replica (and every replay of a log) must use for raft entries.
func (s *State) Apply(index uint64, data []byte) (id uint64, res Result) {
	return s.ApplyEntry(index, 0, data)
}

// ApplyEntry is Apply for the raft entry at index of term: a command whose
// proposal term (Command.Term, when set) differs from term is skipped like
// an undecodable one — the applied index advances, nothing else changes —
// and res.Err wraps ErrTermChanged. Such a proposal crossed a leader change
// (it sat in a deposed leader's inbox and was forwarded on, say), so its
// proposer already gave up on it and may have retried: applying it too
// would apply a request twice, or after its client moved on. An entry that
// the proposer's own term appended commits before any later term's
// entries or never, so a retry in a later term always sees its effect.
// term 0 disables the check.
func (s *State) ApplyEntry(index, term uint64, data []byte) (id uint64, res Result) {
	var (
		c      *Command
		decErr error
	)
	// Decode outside the lock: it only reads data and allocates. c may
	// alias data (applyCopies), which nothing changes while it applies.
	if len(data) > 0 {
		c, id, decErr = decodeCommand(data, true)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.applied {
		return 0, Result{Revision: s.revision, Err: fmt.Errorf("apply index %d: %w (applied index is %d)", index, ErrAlreadyApplied, s.applied)}
	}
	s.applied = index
	switch {
	case len(data) == 0:
		return 0, Result{Revision: s.revision}
	case decErr != nil:
		return id, Result{Revision: s.revision, Err: fmt.Errorf("apply index %d: %w", index, decErr)}
	case term != 0 && c.Term != 0 && c.Term != term:
		return c.ID, Result{Revision: s.revision, Err: fmt.Errorf("apply index %d: %w (proposed in term %d, appended in term %d)", index, ErrTermChanged, c.Term, term)}
	}
	return c.ID, s.applyCommand(c)
}

// applyCommand dispatches on the op; each op has its own applyXxx. The
// caller holds s.mu for writing.
func (s *State) applyCommand(c *Command) Result {
	switch c.Op.Base() {
	case OpPut:
		return s.applyPut(c)
	case OpDelete:
		return s.applyDelete(c)
	case OpSetClusterID:
		return s.applySetClusterID(c)
	case OpSetMemberHTTP:
		return s.applySetMemberHTTP(c)
	case OpWorkerRegister:
		return s.applyWorkerRegister(c)
	case OpWorkerFence:
		return s.applyWorkerTransition(c, WorkerFenced)
	case OpWorkerLeave:
		return s.applyWorkerTransition(c, WorkerLeft)
	case OpLeaseGrant:
		return s.applyLeaseGrant(c)
	case OpLeaseRevoke:
		return s.applyLeaseRevoke(c)
	case OpPutLease:
		return s.applyPutLease(c)
	case OpLockAcquire:
		return s.applyLockAcquire(c)
	case OpLockRelease:
		return s.applyLockRelease(c)
	case OpDeleteSystem:
		return s.applyDeleteSystem(c)
	case OpJobRegister:
		return s.applyJobRegister(c)
	case OpJobStop:
		return s.applyJobStop(c)
	case OpPlan:
		return s.applyPlan(c)
	case OpAllocUpdate:
		return s.applyAllocUpdate(c)
	case OpWorkerDrain:
		return s.applyWorkerDrain(c)
	case OpAllocRestart:
		return s.applyAllocRestart(c)
	case OpCertRevoke:
		return s.applyCertRevoke(c)
	case OpJoinTokenCreate:
		return s.applyJoinTokenCreate(c)
	case OpJoinTokenRevoke:
		return s.applyJoinTokenRevoke(c)
	case OpJoinTokenUse:
		return s.applyJoinTokenUse(c)
	case OpACLBootstrap:
		return s.applyACLBootstrap(c)
	case OpACLPolicyPut:
		return s.applyACLPolicyPut(c)
	case OpACLPolicyDelete:
		return s.applyACLPolicyDelete(c)
	case OpACLTokenCreate:
		return s.applyACLTokenCreate(c)
	case OpACLTokenDelete:
		return s.applyACLTokenDelete(c)
	case OpZNodeCreate:
		return s.applyZNodeCreate(c)
	case OpZNodeDelete:
		return s.applyZNodeDelete(c)
	case OpZNodeSetData:
		return s.applyZNodeSetData(c)
	case OpZNodeSetACL:
		return s.applyZNodeSetACL(c)
	case OpZNodeMulti:
		return s.applyZNodeMulti(c)
	case OpZNodeCloseSession:
		return s.applyZNodeCloseSession(c)
	case OpZNodeWrite:
		return s.applyZNodeWrite(c)
	case OpZNodeBindSession:
		return s.applyZNodeBindSession(c)
	case OpZNodeFrom:
		return s.applyZNodeFrom(c)
	case OpACLFenced:
		return s.applyACLFenced(c)
	default:
		// decodeCommand only lets an unknown op through when it carries
		// IgnoreUnknownTypeFlag: skipping it is the proposer's documented
		// intent, so it is not an error.
		return Result{Revision: s.revision}
	}
}

func (s *State) invalid(format string, args ...any) Result {
	return Result{Revision: s.revision, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)}
}

// compare checks c's compare-and-set precondition against the key's current
// item. ok is false when the command must not be applied; res then says why.
func (s *State) compare(c *Command, cur item, exists bool) (res Result, ok bool) {
	if !c.HasPrev {
		return Result{}, true
	}
	if c.PrevRevision < 0 {
		return s.invalid("%s %q: negative prev revision %d", c.Op, c.Key, c.PrevRevision), false
	}
	var curMod int64
	if exists {
		curMod = cur.mod
	}
	if curMod != c.PrevRevision {
		return Result{Revision: s.revision, Err: &CompareError{Key: c.Key, Want: c.PrevRevision, CurrentModRevision: curMod}}, false
	}
	return Result{}, true
}

// applyPut stores the value: revision+1, mod=revision, version+1, and
// create=revision when the key did not exist.
func (s *State) applyPut(c *Command) Result {
	if c.Key == "" {
		return s.invalid("put: empty key")
	}
	cur, exists := s.kvs.Get(item{key: c.Key})
	if res, ok := s.compare(c, cur, exists); !ok {
		return res
	}
	// c.Value is owned by c (decodeCommand copies it out of the entry). A
	// plain put detaches the key from its lease (etcd semantics).
	var res Result
	s.putItem(c.Key, c.Value, cur, exists, 0, &res)
	s.detachLease(c.Key)
	res.Revision = s.revision
	return res
}

// applyDelete removes the key. Only a delete that removed something bumps
// the revision; deleting a missing key changes nothing.
func (s *State) applyDelete(c *Command) Result {
	if c.Key == "" {
		return s.invalid("delete: empty key")
	}
	cur, exists := s.kvs.Get(item{key: c.Key})
	if res, ok := s.compare(c, cur, exists); !ok {
		return res
	}
	if !exists {
		return Result{Revision: s.revision}
	}
	res := Result{Deleted: 1}
	s.deleteItem(c.Key, s.ext.KeyLeases[c.Key], &res)
	s.detachLease(c.Key)
	res.Revision = s.revision
	return res
}

// applySetClusterID records the cluster id if none is set (first writer
// wins). Re-proposing the same id succeeds; a different id fails with
// ErrClusterIDMismatch. It does not touch the KV revision. The id travels in
// Key; Value is accepted when Key is empty.
func (s *State) applySetClusterID(c *Command) Result {
	id := c.Key
	if id == "" {
		id = string(c.Value)
	} else if len(c.Value) > 0 && string(c.Value) != id {
		return s.invalid("set cluster id: key %q and value %q disagree", c.Key, c.Value)
	}
	if id == "" {
		return s.invalid("set cluster id: empty id")
	}
	switch s.clusterID {
	case "":
		s.clusterID = id
	case id:
	default:
		return Result{Revision: s.revision, Err: fmt.Errorf("set cluster id %q: %w (%q)", id, ErrClusterIDMismatch, s.clusterID)}
	}
	return Result{Revision: s.revision}
}
