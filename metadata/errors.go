package metadata

import (
	"errors"
	"fmt"
)

var (
	// ErrCompareFailed reports that a compare-and-set precondition did not
	// hold. Apply returns it wrapped in a *CompareError.
	ErrCompareFailed = errors.New("compare failed")
	// ErrInvalid reports a command that decodes but is not acceptable, such
	// as an empty key or a negative prev revision.
	ErrInvalid = errors.New("invalid command")
	// ErrMalformed reports bytes that are not a well-formed command record.
	ErrMalformed = errors.New("malformed command")
	// ErrUnknownOp reports an op this binary does not know and that was not
	// marked with IgnoreUnknownTypeFlag. A replica that sees it in Apply
	// cannot stay consistent with newer replicas and should stop applying.
	ErrUnknownOp = errors.New("unknown op")
	// ErrUnsupportedVersion reports a command or snapshot format version this
	// binary cannot read (written by a newer version of corral).
	ErrUnsupportedVersion = errors.New("unsupported format version")
	// ErrCorruptSnapshot reports snapshot bytes that fail validation:
	// truncated, bad magic, bad checksum or inconsistent contents.
	ErrCorruptSnapshot = errors.New("corrupt metadata snapshot")
	// ErrClusterIDMismatch reports an OpSetClusterID whose id differs from the
	// one already recorded (the first writer wins).
	ErrClusterIDMismatch = errors.New("cluster id already set to a different value")
	// ErrAlreadyApplied reports an Apply call whose index is not above the
	// applied index; the entry is ignored so that a replayed entry can never
	// be applied twice.
	ErrAlreadyApplied = errors.New("log index already applied")
	// ErrTermChanged reports a command that a leader of another term than
	// its proposer's appended (Command.Term). Apply skipped it: it had no
	// effect, and the proposer may safely try again.
	ErrTermChanged = errors.New("the raft term changed between proposing and appending this command; it was not applied")
)

// CompareError is the error of a failed compare-and-set. It matches
// ErrCompareFailed with errors.Is and carries the key's current mod revision
// (0 when the key does not exist) so the API can report it.
type CompareError struct {
	Key                string
	Want               int64
	CurrentModRevision int64
}

// Error implements error.
func (e *CompareError) Error() string {
	return fmt.Sprintf("compare failed on key %q: want mod_revision %d, have %d", e.Key, e.Want, e.CurrentModRevision)
}

// Is makes errors.Is(err, ErrCompareFailed) true for a *CompareError.
func (e *CompareError) Is(target error) bool { return target == ErrCompareFailed }
