package metadata

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// API limits for keys and values. Apply itself only rejects empty keys so
// that these limits can change without affecting the replicated log.
const (
	MaxKeyLen   = 1024
	MaxValueLen = 1 << 20
)

// ValidateKey checks a client-supplied key against the API rules: non-empty,
// at most MaxKeyLen bytes, valid UTF-8, no NUL. Errors wrap ErrInvalid.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key is %d bytes, limit %d", ErrInvalid, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalid)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: key contains NUL", ErrInvalid)
	}
	return nil
}

// ErrTooLarge reports a value over MaxValueLen (HTTP 413 "too_large").
var ErrTooLarge = errors.New("value too large")

// ValidateValue checks a client-supplied value length against MaxValueLen.
// Errors wrap ErrTooLarge.
func ValidateValue(value []byte) error {
	if len(value) > MaxValueLen {
		return fmt.Errorf("%w: value is %d bytes, limit %d", ErrTooLarge, len(value), MaxValueLen)
	}
	return nil
}
