// Package fault holds the typed errors the controller's packages return
// for a request that cannot be done, and the kinds the HTTP API maps to
// status codes (in roles/controller/api, the only place that knows HTTP).
// Domain code says what went wrong and what to do; the edge says how to
// put that on the wire, like Nomad's CodedError or etcd's togRPCError.
package fault

import (
	"errors"
	"fmt"
)

// Kind is the class of a failure, which decides how a client should react.
type Kind int

// Kinds of failures.
const (
	// Internal is a bug or an I/O failure: nothing the client can fix.
	Internal Kind = iota
	// Invalid is a request that can never succeed as sent.
	Invalid
	// NotFound names something that does not exist.
	NotFound
	// Conflict is a request the current state refuses; it may succeed
	// once the state changes.
	Conflict
	// Unavailable means this controller cannot serve it now (no leader,
	// not the leader, stopping, a worker out of reach); retry, maybe on
	// another controller.
	Unavailable
	// Timeout means the outcome is unknown: it may or may not have taken
	// effect.
	Timeout
	// Limit means a bound was reached (too many leases, waiters, ...).
	Limit
	// NoAnswer means a worker or peer the request depends on did not
	// answer in time.
	NoAnswer
)

// Error is a typed failure: a kind, a stable machine-readable code and a
// message that says what to do.
type Error struct {
	Kind    Kind
	Code    string
	Message string
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// New returns an *Error of kind with code and a formatted message.
func New(kind Kind, code, format string, a ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, a...)}
}

var (
	// ErrNoLeader means no leader is known; nothing was proposed, so the
	// request can safely be retried on another controller.
	ErrNoLeader = errors.New("no leader: the controller quorum has no elected leader right now")
	// ErrTimeout means the request was proposed but not seen applied in
	// time; its outcome is unknown.
	ErrTimeout = errors.New("request timed out before it was applied; its outcome is unknown")
	// ErrStopped means the controller is shutting down.
	ErrStopped = errors.New("controller is stopping")
	// ErrLeadershipMoved means the leader handed leadership away to carry
	// out the request (removing itself): the API replays the request on
	// the new leader.
	ErrLeadershipMoved = errors.New("leadership moved")
	// ErrNotLeader means the request needs the leader, this controller is
	// not it and does not know where the leader's API is.
	ErrNotLeader = New(Unavailable, "not_leader",
		"this controller is not the leader and does not know the leader's HTTP address; retry on another controller")
)
