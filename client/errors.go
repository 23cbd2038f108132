package client

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel errors matched with errors.Is against an *Error returned by the client.
var (
	// ErrNotFound: the key does not exist (HTTP 404, code "not_found").
	ErrNotFound = errors.New("not found")
	// ErrCompareFailed: a CompareAndPut saw a different mod revision (HTTP 409, code "compare_failed");
	// Error.ModRevision holds the key's current mod revision (0 when the key does not exist).
	ErrCompareFailed = errors.New("compare failed")
	// ErrNoLeader: the controller that answered knows no leader (HTTP 503, code "no_leader"). Nothing was proposed,
	// so retrying is safe.
	ErrNoLeader = errors.New("no leader")
	// ErrNotReady: the controller is not ready to serve yet (HTTP 503, code "not_ready"). Retrying is safe.
	ErrNotReady = errors.New("not ready")
	// ErrTimeout: the request was proposed but did not finish in time (HTTP 503, code "timeout"), or the client's own
	// per-call timeout expired while waiting for an answer. The outcome is unknown: the write may or may not apply.
	ErrTimeout = errors.New("timeout")
	// ErrUnauthorized: the bearer token is missing or wrong (HTTP 401, code "unauthorized").
	ErrUnauthorized = errors.New("unauthorized")
	// ErrBadRequest: the server rejected the request as malformed, e.g. an empty or invalid key (HTTP 400).
	ErrBadRequest = errors.New("bad request")
	// ErrTooLarge: the key or value exceeds the server's limits (HTTP 413, code "too_large").
	ErrTooLarge = errors.New("too large")
	// ErrNoSpace: the cluster's storage quota is used up; delete data to write again (HTTP 507, code "no_space").
	ErrNoSpace = errors.New("no space")
	// ErrTooManyLeases: the cluster's lease cap is reached; revoke unused leases (HTTP 429, code "too_many_leases").
	ErrTooManyLeases = errors.New("too many leases")
	// ErrPermissionDenied: the token lacks the permission the request needs (HTTP 403, code
	// "permission_denied"); Error.Permission names it.
	ErrPermissionDenied = errors.New("permission denied")
)

// codeSentinels maps the API's machine-readable error codes to the sentinels above.
var codeSentinels = map[string]error{
	"not_found":         ErrNotFound,
	"compare_failed":    ErrCompareFailed,
	"no_leader":         ErrNoLeader,
	"not_ready":         ErrNotReady,
	"timeout":           ErrTimeout,
	"unauthorized":      ErrUnauthorized,
	"bad_request":       ErrBadRequest,
	"too_large":         ErrTooLarge,
	"no_space":          ErrNoSpace,
	"too_many_leases":   ErrTooManyLeases,
	"permission_denied": ErrPermissionDenied,
}

// Error is an error answer from the corral HTTP API: `{"error": "...", "code": "...", "mod_revision": N}` plus the
// HTTP status it came with. Use errors.Is with the Err* sentinels rather than comparing Code strings.
type Error struct {
	// Status is the HTTP status code of the answer.
	Status int
	// Code is the machine-readable error code ("not_found", "compare_failed", ...); empty when the answer was not
	// a corral JSON error (for instance a proxy's HTML error page).
	Code string
	// Message is the human-readable explanation sent by the server.
	Message string
	// ModRevision is the key's current mod revision for compare_failed errors, else 0.
	ModRevision int64
	// Fields lists the invalid fields of an invalid_spec answer.
	Fields []FieldError
	// Permission names what a permission_denied answer lacked.
	Permission *Permission
}

// Permission is a permission an ACL token lacked: Access ("read" or
// "write") on Resource ("kv", "coord", "jobs", "workers", "operator", or
// "management") for Name (nil: some name).
type Permission struct {
	Resource string  `json:"resource"`
	Access   string  `json:"access,omitempty"`
	Name     *string `json:"name,omitempty"`
}

// Error implements error.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code == "" {
		return fmt.Sprintf("corral API: %s (HTTP %d)", msg, e.Status)
	}
	return fmt.Sprintf("corral API: %s (HTTP %d, code %s)", msg, e.Status, e.Code)
}

// Is reports whether target is the sentinel that corresponds to e.Code, so errors.Is(err, client.ErrNotFound) works
// through any wrapping.
func (e *Error) Is(target error) bool {
	s, ok := codeSentinels[e.Code]
	return ok && s == target
}

// retryElsewhere reports whether another endpoint may be tried after this answer: only when the server guarantees
// that nothing took effect (no leader known, not ready yet, or "acl_changed": the state machine refused the write
// because access control changed after the request was authorized, and the retry is authorized again). "timeout"
// is deliberately excluded because the proposal may still commit, and a blind retry could apply a write twice.
func (e *Error) retryElsewhere() bool {
	return e.Status == http.StatusServiceUnavailable &&
		(e.Code == "no_leader" || e.Code == "not_ready" || e.Code == "not_leader" || e.Code == "acl_changed")
}
