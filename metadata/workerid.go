package metadata

import (
	"fmt"
	"regexp"
)

// Worker ids and label keys are checked by the worker when it starts and by
// the leader when it registers one, so the rule lives here, below both.

// workerIDPattern is what a worker id may look like: it appears in URLs,
// logs and file names.
var workerIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// labelKeyPattern is what a worker label key may look like.
var labelKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$`)

// ValidateWorkerID reports why id cannot be a worker id, or nil.
func ValidateWorkerID(id string) error {
	if !workerIDPattern.MatchString(id) {
		return fmt.Errorf("worker id %q: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// ValidateLabelKey reports why k cannot be a worker label key, or nil.
func ValidateLabelKey(k string) error {
	if !labelKeyPattern.MatchString(k) {
		return fmt.Errorf("label key %q: use 1-63 letters, digits, '.', '_', '/' or '-'", k)
	}
	return nil
}
