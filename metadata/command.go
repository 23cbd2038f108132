package metadata

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// CommandFormatV1 is the first byte of a command record without a proposal
// term. See docs/ENCODING.md.
const CommandFormatV1 = 1

// CommandFormatV2 is the first byte of a command record that carries the
// term its proposer was in (Command.Term): an entry that a leader of
// another term appended is not applied. See docs/ENCODING.md.
const CommandFormatV2 = 2

// isCommandFormat reports whether b is a command format this binary reads;
// the op is the second byte in every one of them.
func isCommandFormat(b byte) bool { return b == CommandFormatV1 || b == CommandFormatV2 }

// Op identifies what a Command does. Values 1..127 name operations; the high
// bit is IgnoreUnknownTypeFlag.
type Op uint8

// Operations known to this version. Values are persisted in the raft log and
// must never be renumbered or reused.
const (
	// OpPut stores Value under Key (optionally compare-and-set).
	OpPut Op = 1
	// OpDelete removes Key (optionally compare-and-set).
	OpDelete Op = 2
	// OpSetClusterID records the cluster id carried in Key if none is set yet.
	OpSetClusterID Op = 3
	// OpSetMemberHTTP records the HTTP address (Value) of the controller
	// whose decimal id is Key. Ops 10-19 belong to controller membership.
	OpSetMemberHTTP Op = 10
)

// IgnoreUnknownTypeFlag may be OR-ed into an Op by a proposer (like Nomad's
// structs.IgnoreUnknownTypeFlag). A replica that does not know the op then
// skips the entry instead of failing with ErrUnknownOp. Only set it on ops
// whose effects older replicas may safely miss (e.g. advisory state);
// replicas that know the op apply it normally regardless of the flag.
const IgnoreUnknownTypeFlag Op = 0x80

// Base returns the op without IgnoreUnknownTypeFlag.
func (o Op) Base() Op { return o &^ IgnoreUnknownTypeFlag }

// Ignorable reports whether IgnoreUnknownTypeFlag is set.
func (o Op) Ignorable() bool { return o&IgnoreUnknownTypeFlag != 0 }

// String returns a short name for logs.
func (o Op) String() string {
	s, ok := opNames[o.Base()]
	if !ok {
		s = "op(" + strconv.Itoa(int(o.Base())) + ")"
	}
	if o.Ignorable() {
		s += "|ignorable"
	}
	return s
}

// Command is one replicated state-machine operation, the payload of a raft
// log entry. Use Marshal to produce the log bytes.
type Command struct {
	ID uint64 // proposer's request id; used only to wake the waiter
	// Term is the raft term the proposer was in when it proposed (0: not
	// checked). Apply skips an entry whose raft term differs: a proposal
	// that reached a leader of a later term only after a leader change
	// (through a paused leader's inbox, say) would otherwise commit after
	// its client was told to retry, and both attempts could take effect.
	Term         uint64
	Op           Op
	Key          string // for OpSetClusterID: the cluster id
	Value        []byte
	PrevRevision int64 // compare-and-set on mod_revision, meaningful iff HasPrev; 0 = key must not exist
	HasPrev      bool

	// payload keeps the raw payload of an op this version does not know
	// (only decodable when ignorable) so Marshal reproduces the input.
	payload []byte
}

// kvFlagHasPrev is bit 0 of the KV payload flags byte. Other bits are
// reserved and rejected so that a newer writer's flags are never silently
// misread.
const kvFlagHasPrev = 1

// isKVOp reports whether o uses the KV payload layout (key, value,
// optional prev revision). Every op known to this version does: ops with
// structured payloads carry them JSON-encoded in Value.
func isKVOp(o Op) bool {
	_, ok := opNames[o.Base()]
	return ok
}

// opNames lists the ops this version knows. Files that add ops register
// them here.
var opNames = map[Op]string{
	OpPut:           "put",
	OpDelete:        "delete",
	OpSetClusterID:  "set_cluster_id",
	OpSetMemberHTTP: "set_member_http",
	// Worker ops (20-29), see workers.go.
	OpWorkerRegister: "worker_register",
	OpWorkerFence:    "worker_fence",
	OpWorkerLeave:    "worker_leave",
	// Coordination ops (30-49), see coord.go.
	OpLeaseGrant:   "lease_grant",
	OpLeaseRevoke:  "lease_revoke",
	OpPutLease:     "put_lease",
	OpLockAcquire:  "lock_acquire",
	OpLockRelease:  "lock_release",
	OpDeleteSystem: "delete_system",
	// Job ops (50-59), see jobs.go.
	OpJobRegister:  "job_register",
	OpJobStop:      "job_stop",
	OpPlan:         "plan",
	OpAllocUpdate:  "alloc_update",
	OpWorkerDrain:  "worker_drain",
	OpAllocRestart: "alloc_restart",
	// Certificate ops (60-69), see certs.go.
	OpCertRevoke: "cert_revoke",
	// Join token ops (61-63), see jointoken.go.
	OpJoinTokenCreate: "join_token_create",
	OpJoinTokenRevoke: "join_token_revoke",
	OpJoinTokenUse:    "join_token_use",
	// ACL ops (70-74), see acl.go.
	OpACLBootstrap:    "acl_bootstrap",
	OpACLPolicyPut:    "acl_policy_put",
	OpACLPolicyDelete: "acl_policy_delete",
	OpACLTokenCreate:  "acl_token_create",
	OpACLTokenDelete:  "acl_token_delete",
	// ZooKeeper znode ops (80-89), see znode.go.
	OpZNodeCreate:       "znode_create",
	OpZNodeDelete:       "znode_delete",
	OpZNodeSetData:      "znode_set_data",
	OpZNodeSetACL:       "znode_set_acl",
	OpZNodeMulti:        "znode_multi",
	OpZNodeCloseSession: "znode_close_session",
	OpZNodeWrite:        "znode_write",
	OpZNodeBindSession:  "znode_bind_session",
	OpZNodeFrom:         "znode_from",
	OpACLFenced:         "acl_fenced",
}

// Marshal encodes c as a v1 command record: version byte, op byte, uvarint
// id, uvarint payload length, op-specific payload. The encoding is canonical.
func (c *Command) Marshal() []byte {
	if !isKVOp(c.Op) {
		b := make([]byte, 0, 2+binary.MaxVarintLen64*3+len(c.payload))
		b = c.appendHeader(b)
		return appendLenBytes(b, c.payload)
	}
	n := c.kvPayloadLen()
	b := make([]byte, 0, 2+binary.MaxVarintLen64*3+n)
	b = c.appendHeader(b)
	b = binary.AppendUvarint(b, uint64(n))
	return c.appendKVPayload(b)
}

// appendHeader appends the format, op, id and (format 2) term. A command
// without a term keeps format 1, byte for byte what older versions wrote.
func (c *Command) appendHeader(b []byte) []byte {
	if c.Term == 0 {
		b = append(b, CommandFormatV1, byte(c.Op))
		return binary.AppendUvarint(b, c.ID)
	}
	b = append(b, CommandFormatV2, byte(c.Op))
	b = binary.AppendUvarint(b, c.ID)
	return binary.AppendUvarint(b, c.Term)
}

func (c *Command) kvPayloadLen() int {
	n := 1 + uvarintLen(uint64(len(c.Key))) + len(c.Key) + uvarintLen(uint64(len(c.Value))) + len(c.Value)
	if c.HasPrev {
		n += uvarintLen(zigzag(c.PrevRevision))
	}
	return n
}

func (c *Command) appendKVPayload(b []byte) []byte {
	var flags byte
	if c.HasPrev {
		flags |= kvFlagHasPrev
	}
	b = append(b, flags)
	b = appendLenString(b, c.Key)
	b = appendLenBytes(b, c.Value)
	if c.HasPrev {
		b = binary.AppendVarint(b, c.PrevRevision)
	}
	return b
}

func zigzag(x int64) uint64 {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	return ux
}

// UnmarshalCommand decodes a command record. It returns an error wrapping
// ErrMalformed for garbage, truncation or trailing bytes,
// ErrUnsupportedVersion for an unknown format version and ErrUnknownOp for an
// unknown op without IgnoreUnknownTypeFlag. It never panics and the returned
// Command shares no memory with b.
func UnmarshalCommand(b []byte) (*Command, error) {
	c, _, err := decodeCommand(b, false)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// CheckApplicable reports, from the envelope header alone, whether Apply
// would stop on b: an unknown format version, or an op this binary does not
// know and may not ignore (ErrUnsupportedVersion, ErrUnknownOp). Any other
// flaw is reported by Apply as the command's own error, so such an entry is
// harmless in the log; one that fails here would halt every replica that
// applies it. It reads two bytes and allocates nothing: the leader runs it
// on every forwarded proposal.
func CheckApplicable(b []byte) error {
	switch {
	case len(b) == 0:
		return fmt.Errorf("check command: %w: empty", ErrMalformed)
	case !isCommandFormat(b[0]):
		return fmt.Errorf("check command: %w: command format %d (this binary reads 1 and 2)", ErrUnsupportedVersion, b[0])
	case len(b) < 2:
		return fmt.Errorf("check command op: %w: no op", ErrMalformed)
	}
	if op := Op(b[1]); !isKVOp(op) && !op.Ignorable() {
		return fmt.Errorf("%w %d (not ignorable; this binary is older than the log)", ErrUnknownOp, uint8(op))
	}
	return nil
}

// decodeCommand is UnmarshalCommand that also returns the request id as soon
// as the envelope header decoded, so Apply can hand an error for an unknown
// op back to the proposer's waiter. With forApply, the Value of an op in
// applyCopies aliases b rather than copying it.
func decodeCommand(b []byte, forApply bool) (*Command, uint64, error) {
	r := reader{b: b}
	ver, err := r.byte()
	if err != nil {
		return nil, 0, fmt.Errorf("decode command version: %w: %w", ErrMalformed, err)
	}
	if !isCommandFormat(ver) {
		return nil, 0, fmt.Errorf("decode command: %w: command format %d (this binary reads 1 and 2)", ErrUnsupportedVersion, ver)
	}
	opb, err := r.byte()
	if err != nil {
		return nil, 0, fmt.Errorf("decode command op: %w: %w", ErrMalformed, err)
	}
	c := &Command{Op: Op(opb)}
	if c.ID, err = r.uvarint(); err != nil {
		return nil, 0, fmt.Errorf("decode command id: %w: %w", ErrMalformed, err)
	}
	if ver == CommandFormatV2 {
		if c.Term, err = r.uvarint(); err != nil {
			return nil, c.ID, fmt.Errorf("decode command term: %w: %w", ErrMalformed, err)
		}
		if c.Term == 0 {
			// Format 2 exists to carry a term; 0 would encode as format 1,
			// so accepting it would give one command two encodings.
			return nil, c.ID, fmt.Errorf("decode command term: %w: format 2 with term 0", ErrMalformed)
		}
	}
	payload, err := r.lenBytes()
	if err != nil {
		return nil, c.ID, fmt.Errorf("decode command payload length: %w: %w", ErrMalformed, err)
	}
	if r.remaining() != 0 {
		return nil, c.ID, fmt.Errorf("decode command: %w: %d trailing bytes", ErrMalformed, r.remaining())
	}
	switch {
	case isKVOp(c.Op):
		err = c.decodeKVPayload(payload, forApply && applyCopies[c.Op])
	case c.Op.Ignorable():
		c.payload = append([]byte(nil), payload...)
	default:
		err = fmt.Errorf("%w %d (not ignorable; this binary is older than the log)", ErrUnknownOp, uint8(c.Op))
	}
	if err != nil {
		return nil, c.ID, fmt.Errorf("decode %s command: %w", c.Op, err)
	}
	return c, c.ID, nil
}

// applyCopies lists the ops whose apply copies whatever it keeps of the
// command's Value (decodeZNodeFrom, decodeZNodeWrite's readString, readData
// and readZNodeACL, decodePayload's JSON), so Apply may decode them without
// a copy of their own: that copy was the largest single allocation of a
// ZooKeeper write on every controller.
var applyCopies = map[Op]bool{OpZNodeFrom: true, OpZNodeWrite: true}

func (c *Command) decodeKVPayload(p []byte, alias bool) error {
	r := reader{b: p}
	flags, err := r.byte()
	if err != nil {
		return fmt.Errorf("flags: %w: %w", ErrMalformed, err)
	}
	if flags&^kvFlagHasPrev != 0 {
		return fmt.Errorf("%w: reserved flag bits set (%#x)", ErrMalformed, flags)
	}
	key, err := r.lenBytes()
	if err != nil {
		return fmt.Errorf("key: %w: %w", ErrMalformed, err)
	}
	val, err := r.lenBytes()
	if err != nil {
		return fmt.Errorf("value: %w: %w", ErrMalformed, err)
	}
	c.Key = string(key)
	switch {
	case len(val) == 0:
	case alias:
		c.Value = val
	default:
		c.Value = append([]byte(nil), val...)
	}
	if flags&kvFlagHasPrev != 0 {
		c.HasPrev = true
		if c.PrevRevision, err = r.varint(); err != nil {
			return fmt.Errorf("prev revision: %w: %w", ErrMalformed, err)
		}
	}
	if r.remaining() != 0 {
		return fmt.Errorf("%w: %d trailing payload bytes", ErrMalformed, r.remaining())
	}
	return nil
}
