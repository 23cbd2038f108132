package metadata

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// Certificate ops (60-69).
const (
	// OpCertRevoke adds a certificate serial or a worker id to the
	// deny-list every controller checks on each handshake (RevokeRequest).
	OpCertRevoke Op = 60
)

// MaxRevocations bounds the deny-list: it lives in every snapshot and is
// consulted on every handshake. Certificates expire; a CA re-made for a
// cluster that needs more starts a fresh list.
const MaxRevocations = 10000

// ErrTooManyRevocations is returned when the deny-list is full.
var ErrTooManyRevocations = errors.New("the certificate deny-list is full")

// maxSerialBytes is RFC 5280's limit on a serial number's length.
const maxSerialBytes = 20

// SerialHex is how the deny-list spells a certificate's serial number: the
// way 'openssl x509 -noout -serial' prints it, upper-case hex in whole
// bytes.
func SerialHex(n *big.Int) string {
	if n == nil {
		return ""
	}
	s := strings.ToUpper(n.Text(16))
	if len(s)%2 == 1 {
		s = "0" + s
	}
	return s
}

// NormalizeSerial accepts a serial as people copy it (any case, with or
// without colons or leading zeros, an optional "serial=" prefix) and
// returns it as SerialHex spells it.
func NormalizeSerial(s string) (string, error) {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "serial="), ":", "")
	bad := fmt.Errorf("serial %q: want a certificate's serial number in hex, as 'openssl x509 -noout -serial' or 'corral certs issue' prints it (1 to %d bytes, not zero)", s, maxSerialBytes)
	if h == "" || strings.ContainsAny(h, "+-_xX") || len(h) > 2*maxSerialBytes+8 {
		return "", bad
	}
	n, ok := new(big.Int).SetString(h, 16)
	if !ok || n.Sign() <= 0 || len(n.Bytes()) > maxSerialBytes {
		return "", bad
	}
	return SerialHex(n), nil
}

// ValidateSerial reports why s is not a serial as SerialHex spells it, or
// nil.
func ValidateSerial(s string) error {
	n, err := NormalizeSerial(s)
	if err != nil {
		return err
	}
	if n != s {
		return fmt.Errorf("serial %q: write it as %s", s, n)
	}
	return nil
}

// RevokeRequest is the payload of OpCertRevoke: exactly one of Serial (one
// certificate) or Worker (every certificate naming that worker).
type RevokeRequest struct {
	Serial string `json:"serial,omitempty"`
	Worker string `json:"worker,omitempty"`
	Reason string `json:"reason,omitempty"`
	AtMS   int64  `json:"at_ms"`
}

// maxRevokeReason bounds the free-text reason kept in the state.
const maxRevokeReason = 256

// Validate reports why r cannot be applied, or nil.
func (r RevokeRequest) Validate() error {
	switch {
	case (r.Serial == "") == (r.Worker == ""):
		return errors.New("revoke exactly one of a certificate serial or a worker id")
	case r.Serial != "":
		if err := ValidateSerial(r.Serial); err != nil {
			return err
		}
	default:
		if err := ValidateWorkerID(r.Worker); err != nil {
			return err
		}
	}
	if len(r.Reason) > maxRevokeReason {
		return fmt.Errorf("reason is %d bytes; at most %d", len(r.Reason), maxRevokeReason)
	}
	return nil
}

// Revocation is one deny-list entry.
type Revocation struct {
	Serial string `json:"serial,omitempty"`
	Worker string `json:"worker,omitempty"`
	Reason string `json:"reason,omitempty"`
	AtMS   int64  `json:"at_ms"`
}

func (s *State) applyCertRevoke(c *Command) Result {
	var r RevokeRequest
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	if err := r.Validate(); err != nil {
		return s.invalid("%v", err)
	}
	e := &s.ext
	if r.Serial != "" && e.RevokedSerials[r.Serial] != nil || r.Worker != "" && e.RevokedWorkers[r.Worker] != nil {
		return Result{Revision: s.revision} // already denied: idempotent
	}
	if len(e.RevokedSerials)+len(e.RevokedWorkers) >= MaxRevocations {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w (%d entries)", ErrTooManyRevocations, MaxRevocations)}
	}
	rev := &Revocation{Serial: r.Serial, Worker: r.Worker, Reason: r.Reason, AtMS: r.AtMS}
	if r.Serial != "" {
		if e.RevokedSerials == nil {
			e.RevokedSerials = map[string]*Revocation{}
		}
		e.RevokedSerials[r.Serial] = rev
	} else {
		if e.RevokedWorkers == nil {
			e.RevokedWorkers = map[string]*Revocation{}
		}
		e.RevokedWorkers[r.Worker] = rev
	}
	return Result{Revision: s.revision}
}

// Revoked returns the deny-list entry that refuses a certificate with
// this serial (lower-case hex) naming this worker ("" for a controller).
func (s *State) Revoked(serial, worker string) (Revocation, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r := s.ext.RevokedSerials[serial]; r != nil {
		return *r, true
	}
	if worker != "" {
		if r := s.ext.RevokedWorkers[worker]; r != nil {
			return *r, true
		}
	}
	return Revocation{}, false
}

// Revocations returns the deny-list: serials, then workers, each sorted.
func (s *State) Revocations() []Revocation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Revocation, 0, len(s.ext.RevokedSerials)+len(s.ext.RevokedWorkers))
	for _, r := range s.ext.RevokedSerials {
		out = append(out, *r)
	}
	for _, r := range s.ext.RevokedWorkers {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].Serial == "") != (out[j].Serial == "") {
			return out[i].Serial != ""
		}
		return out[i].Serial+out[i].Worker < out[j].Serial+out[j].Worker
	})
	return out
}

// AffectsRevocations reports whether a log entry may change the deny-list,
// from its op alone (an ACL fence's inner op).
func AffectsRevocations(entry []byte) bool {
	op, ok := entryOp(entry) // through an ACL fence (acl_fence.go)
	return ok && op == OpCertRevoke
}

// checkRevocations refuses a snapshot whose deny-list is inconsistent.
func (e *extState) checkRevocations() error {
	if len(e.RevokedSerials)+len(e.RevokedWorkers) > MaxRevocations {
		return corrupt("deny-list holds %d entries, more than %d", len(e.RevokedSerials)+len(e.RevokedWorkers), MaxRevocations)
	}
	for k, r := range e.RevokedSerials {
		if r == nil || r.Serial != k || r.Worker != "" || ValidateSerial(k) != nil {
			return corrupt("deny-list entry for serial %q is inconsistent", k)
		}
	}
	for k, r := range e.RevokedWorkers {
		if r == nil || r.Worker != k || r.Serial != "" || ValidateWorkerID(k) != nil {
			return corrupt("deny-list entry for worker %q is inconsistent", k)
		}
	}
	return nil
}
