package metadata

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// An API request is judged on the ACL state of the controller that serves
// it, which on a follower lags the leader by the replication delay: a
// token deleted or a policy narrowed a moment ago may still pass there.
// Its writes therefore carry the ACL revision they were judged at, and
// apply refuses a write if an ACL change was applied in between, as etcd
// refuses a request whose auth revision is older than its store's
// (ErrAuthOldRevision). The caller retries, and is judged again.

// OpACLFenced wraps a command with the ACL revision its caller was judged
// at (NewACLFencedCommand). Err is ErrACLChanged when the state's
// ACLRevision differs at apply; else the inner command's result.
const OpACLFenced Op = 75

// ErrACLChanged refuses a write judged on ACLs that changed before it was
// applied. Nothing changed; retrying it is safe.
var ErrACLChanged = errors.New("access control changed after the request was authorized")

// ACLRevision returns the index of the last applied entry that changed the
// ACLs (bootstrap, a policy or a token), 0 if none did.
func (s *State) ACLRevision() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ext.ACLRevision
}

// aclChanged records that the entry being applied changed the ACLs and
// publishes the new index. The caller holds s.mu for writing.
func (s *State) aclChanged() {
	s.ext.ACLRevision = s.applied
	s.rebuildACL()
}

// NewACLFencedCommand wraps inner with rev. The wrapper keeps inner's key
// and compare fields, and its value is
//
//	fenced := rev uvarint | op u8 | inner value (the rest)
func NewACLFencedCommand(rev uint64, inner *Command) (*Command, error) {
	if inner.Op.Base() == OpACLFenced || inner.Op != inner.Op.Base() {
		return nil, fmt.Errorf("encode %s: cannot wrap %s", OpACLFenced, inner.Op)
	}
	v := make([]byte, 0, binary.MaxVarintLen64+1+len(inner.Value))
	v = binary.AppendUvarint(v, rev)
	v = append(v, byte(inner.Op))
	v = append(v, inner.Value...)
	return &Command{Op: OpACLFenced, Key: inner.Key, Value: v, PrevRevision: inner.PrevRevision, HasPrev: inner.HasPrev}, nil
}

// decodeACLFenced splits an OpACLFenced command into its revision and
// inner command (whose Value aliases c's). It returns an error, never
// panics.
func decodeACLFenced(c *Command) (uint64, *Command, error) {
	r := reader{b: c.Value}
	rev, err := r.uvarint()
	if err != nil {
		return 0, nil, fmt.Errorf("acl fenced: revision: %w", err)
	}
	op, err := r.byte()
	if err != nil {
		return 0, nil, fmt.Errorf("acl fenced: op: %w", err)
	}
	inner := Op(op)
	if _, known := opNames[inner]; !known || inner == OpACLFenced {
		return 0, nil, fmt.Errorf("acl fenced: cannot wrap op %d", op)
	}
	return rev, &Command{ID: c.ID, Term: c.Term, Op: inner, Key: c.Key, Value: c.Value[r.off:],
		PrevRevision: c.PrevRevision, HasPrev: c.HasPrev}, nil
}

func (s *State) applyACLFenced(c *Command) Result {
	rev, inner, err := decodeACLFenced(c)
	if err != nil {
		return s.invalid("%v", err)
	}
	if rev != s.ext.ACLRevision {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w (judged at ACL revision %d, now %d)", ErrACLChanged, rev, s.ext.ACLRevision)}
	}
	return s.applyCommand(inner)
}

// entryOp returns the op of a raft entry's command without decoding it
// all: for OpACLFenced, the op it wraps. ok is false when entry is not a
// command this binary reads.
func entryOp(entry []byte) (op Op, ok bool) {
	if len(entry) < 2 || !isCommandFormat(entry[0]) {
		return 0, false
	}
	op = Op(entry[1]).Base()
	if op != OpACLFenced {
		return op, true
	}
	// version | op | id | [term] | payload length | flags | key | value,
	// and the value starts with the revision and the inner op.
	r := reader{b: entry, off: 2}
	if _, err := r.uvarint(); err != nil {
		return 0, false
	}
	if entry[0] == CommandFormatV2 {
		if _, err := r.uvarint(); err != nil {
			return 0, false
		}
	}
	if _, err := r.uvarint(); err != nil {
		return 0, false
	}
	if _, err := r.byte(); err != nil {
		return 0, false
	}
	if _, err := r.lenBytes(); err != nil {
		return 0, false
	}
	v, err := r.lenBytes()
	if err != nil {
		return 0, false
	}
	vr := reader{b: v}
	if _, err := vr.uvarint(); err != nil {
		return 0, false
	}
	b, err := vr.byte()
	if err != nil {
		return 0, false
	}
	return Op(b), true
}

// aclFenceKey is the context key of WithACLFence.
type aclFenceKey struct{}

// WithACLFence returns ctx carrying rev, the ACL revision a request was
// judged at: the replica fences every command proposed with ctx (or a
// context derived from it) with rev.
func WithACLFence(ctx context.Context, rev uint64) context.Context {
	return context.WithValue(ctx, aclFenceKey{}, rev)
}

// noFence shadows a fence in a derived context (WithoutACLFence).
type noFence struct{}

// WithoutACLFence returns ctx without its fence, for what a request must
// still do after its caller's ACLs changed: give up a lock it was waiting
// for, say, which must not be refused.
func WithoutACLFence(ctx context.Context) context.Context {
	return context.WithValue(ctx, aclFenceKey{}, noFence{})
}

// Fence returns cmd wrapped with the ACL revision ctx carries
// (WithACLFence), or cmd itself when ctx carries none: what a proposer
// does with every command it proposes for a request.
func Fence(ctx context.Context, cmd *Command) (*Command, error) {
	if rev, ok := ACLFence(ctx); ok {
		return NewACLFencedCommand(rev, cmd)
	}
	return cmd, nil
}

// ACLFence returns the revision WithACLFence put in ctx, ok false if none.
func ACLFence(ctx context.Context) (rev uint64, ok bool) {
	rev, ok = ctx.Value(aclFenceKey{}).(uint64)
	return rev, ok
}
