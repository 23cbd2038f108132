package metadata

import (
	"encoding/binary"
	"errors"
	"math"
)

// errShort and friends are the low-level decoding failures; callers wrap them
// with the record kind (command or snapshot) and the field being read.
var (
	errShort       = errors.New("unexpected end of data")
	errVarint      = errors.New("invalid varint")
	errNonMinimal  = errors.New("non-minimal varint")
	errIntOverflow = errors.New("value exceeds int64")
)

// reader is a bounds-checked cursor over a byte slice. Every method returns
// an error instead of panicking, and lengths read from the input are checked
// against the remaining bytes before anything is allocated, so allocation is
// bounded by the input length.
type reader struct {
	b   []byte
	off int
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// uvarint reads a minimally encoded uvarint. Rejecting non-minimal encodings
// gives every value exactly one encoding, so decode(encode(x)) == x and
// encode(decode(b)) == b for accepted b.
func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		return 0, errShort
	case n < 0:
		return 0, errVarint
	case n > 1 && r.b[r.off+n-1] == 0:
		return 0, errNonMinimal
	}
	r.off += n
	return v, nil
}

// int64u reads a uvarint that must fit a non-negative int64.
func (r *reader) int64u() (int64, error) {
	v, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	if v > math.MaxInt64 {
		return 0, errIntOverflow
	}
	return int64(v), nil
}

// varint reads a minimally encoded zig-zag varint (binary.AppendVarint).
func (r *reader) varint() (int64, error) {
	ux, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, nil
}

// bytes returns the next n bytes without copying; n is checked against the
// remaining input first.
func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(r.remaining()) {
		return nil, errShort
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// lenBytes reads a uvarint length followed by that many bytes (no copy).
func (r *reader) lenBytes() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	return r.bytes(n)
}

func appendLenBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendLenString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
