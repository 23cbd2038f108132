package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A ZooKeeper session can move: its client reconnects to another
// controller while a write it sent through the first one is still on its
// way to the log. ZooKeeper's leader refuses such a write
// (SessionMovedException), because the client, now elsewhere, may already
// have looked for its effect, found nothing, and acted on that (a lock
// recipe creates a second node). These two ops give the state the same
// rule, decided at apply, so every replica decides it at the same log
// position:
//
//   - OpZNodeBindSession, proposed when sessions resume on connections,
//     makes each connection its session's owner (Lease.ZKConn);
//   - OpZNodeFrom wraps a znode write with the connection it came from, and
//     is refused if the session's owner is now another connection.
//
// Both are new op numbers rather than new fields of existing payloads: a
// replica too old to know them stops applying ("needs a newer corral")
// instead of deciding differently (docs/ENCODING.md).
const (
	// OpZNodeBindSession makes connections the owners of ZooKeeper
	// sessions (ZNodeBinds: many resumes in one entry, as a reconnect
	// storm brings them). Out is a []bool: false where the session is
	// gone or the secret hash differs.
	OpZNodeBindSession Op = 87
	// OpZNodeFrom wraps a znode write (OpZNodeWrite, OpZNodeSetACL or
	// OpZNodeMulti) with its ZNodeOrigin (binary, NewZNodeFromCommand).
	// Err is ErrZNodeSessionMoved or ErrZNodeSessionExpired when the
	// origin no longer owns a live session; else the inner op's result.
	OpZNodeFrom Op = 88
)

var (
	// ErrZNodeSessionMoved is ZooKeeper's SessionMoved (-118): the write
	// came through a connection that no longer owns its session.
	ErrZNodeSessionMoved = errors.New("session moved to another connection")
)

// ZNodeBind is one resume of OpZNodeBindSession. SecretHash must equal
// the session's (Lease.SecretHash), so knowing a session id is not enough
// to take it over.
type ZNodeBind struct {
	Session    int64  `json:"session"`
	Conn       uint64 `json:"conn"`
	SecretHash string `json:"secret_hash"`
}

// ZNodeBinds is the payload of OpZNodeBindSession, applied in order.
type ZNodeBinds struct {
	Binds []ZNodeBind `json:"binds"`
}

// MaxZNodeBinds bounds the binds of one entry.
const MaxZNodeBinds = 10000

// ZNodeOrigin names where a znode write came from: a session and the
// connection serving it (a random id, unique across controllers).
type ZNodeOrigin struct {
	Session int64
	Conn    uint64
}

func (s *State) applyZNodeBindSession(c *Command) Result {
	var p ZNodeBinds
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if len(p.Binds) == 0 || len(p.Binds) > MaxZNodeBinds {
		return s.invalid("bind sessions: want 1 to %d binds, got %d", MaxZNodeBinds, len(p.Binds))
	}
	for _, b := range p.Binds {
		if b.Conn == 0 {
			return s.invalid("bind session %#x: conn must not be 0", b.Session)
		}
	}
	bound := make([]bool, len(p.Binds))
	for i, b := range p.Binds {
		l := s.ext.Leases[b.Session]
		if l == nil || l.SecretHash == "" || l.SecretHash != b.SecretHash {
			continue // expired, or not this session's secret
		}
		l.ZKConn = b.Conn
		bound[i] = true
	}
	return Result{Revision: s.revision, Out: bound}
}

// zfromInner lists the ops OpZNodeFrom may wrap.
var zfromInner = map[Op]bool{OpZNodeWrite: true, OpZNodeSetACL: true, OpZNodeMulti: true}

// NewZNodeFromCommand wraps inner, an OpZNodeWrite, OpZNodeSetACL or
// OpZNodeMulti command, with its origin:
//
//	from := session varint | conn uvarint (not 0) | op u8 | inner payload (the rest)
func NewZNodeFromCommand(o ZNodeOrigin, inner *Command) (*Command, error) {
	if !zfromInner[inner.Op] || inner.Key != "" || inner.HasPrev {
		return nil, fmt.Errorf("encode %s: cannot wrap %s", OpZNodeFrom, inner.Op)
	}
	if o.Conn == 0 {
		return nil, fmt.Errorf("encode %s: conn must not be 0", OpZNodeFrom)
	}
	b := appendZNodeFromHead(make([]byte, 0, 2*binary.MaxVarintLen64+1+len(inner.Value)), o, inner.Op)
	b = append(b, inner.Value...)
	return &Command{Op: OpZNodeFrom, Value: b}, nil
}

// NewZNodeFromWriteCommand is NewZNodeFromCommand(o,
// NewZNodeWriteCommand(p)) in one buffer: it is every ZooKeeper write's
// command, and the inner command's copy was a tenth of what a busy
// leader allocated.
func NewZNodeFromWriteCommand(o ZNodeOrigin, p any) (*Command, error) {
	n, err := zwLen(p)
	if err != nil {
		return nil, err
	}
	if o.Conn == 0 {
		return nil, fmt.Errorf("encode %s: conn must not be 0", OpZNodeFrom)
	}
	b := appendZNodeFromHead(make([]byte, 0, 2*binary.MaxVarintLen64+1+n), o, OpZNodeWrite)
	return &Command{Op: OpZNodeFrom, Value: appendZNodeWrite(b, p)}, nil
}

func appendZNodeFromHead(b []byte, o ZNodeOrigin, inner Op) []byte {
	b = binary.AppendVarint(b, o.Session)
	b = binary.AppendUvarint(b, o.Conn)
	return append(b, byte(inner))
}

// decodeZNodeFrom splits an OpZNodeFrom payload into its origin and inner
// command (whose Value aliases p), a value so that applying it allocates
// nothing for it. It returns an error, never panics.
func decodeZNodeFrom(p []byte) (ZNodeOrigin, Command, error) {
	r := reader{b: p}
	var o ZNodeOrigin
	var err error
	if o.Session, err = r.varint(); err != nil {
		return o, Command{}, fmt.Errorf("znode from: session: %w", err)
	}
	if o.Conn, err = r.uvarint(); err != nil {
		return o, Command{}, fmt.Errorf("znode from: conn: %w", err)
	}
	if o.Conn == 0 {
		return o, Command{}, errors.New("znode from: conn 0")
	}
	op, err := r.byte()
	if err != nil {
		return o, Command{}, fmt.Errorf("znode from: op: %w", err)
	}
	if !zfromInner[Op(op)] {
		return o, Command{}, fmt.Errorf("znode from: cannot wrap op %d", op)
	}
	return o, Command{Op: Op(op), Value: p[r.off:]}, nil
}

func (s *State) applyZNodeFrom(c *Command) Result {
	o, inner, err := decodeZNodeFrom(c.Value)
	if err != nil {
		return s.invalid("%v", err)
	}
	l := s.ext.Leases[o.Session]
	switch {
	case l == nil:
		// As ZooKeeper's checkSession: no write from a session that ended.
		return Result{Revision: s.revision, Err: fmt.Errorf("session %#x: %w", o.Session, ErrZNodeSessionExpired)}
	case l.ZKConn != 0 && l.ZKConn != o.Conn:
		// A session never bound (opened here and never resumed) accepts
		// its writes from any connection: it has not moved.
		return Result{Revision: s.revision, Err: fmt.Errorf("session %#x: %w", o.Session, ErrZNodeSessionMoved)}
	}
	switch inner.Op {
	case OpZNodeWrite:
		return s.applyZNodeWrite(&inner)
	case OpZNodeSetACL:
		return s.applyZNodeSetACL(&inner)
	default:
		return s.applyZNodeMulti(&inner)
	}
}
