package jute

import (
	"encoding/binary"
	"fmt"
)

// Record is a jute record: a struct that appends itself to an Encoder and
// reads itself from a Decoder.
type Record interface {
	Encode(e *Encoder)
	// Decode reads the record's fields; on error the record's contents are
	// unspecified and the error is the Decoder's first one.
	Decode(d *Decoder) error
}

// Decoder reads jute primitives from a byte slice, big-endian as Java's
// DataInput writes them.
//
// Its error is sticky: after the first failure every read returns a zero
// value and Err reports that failure. Records can therefore read all their
// fields and check once, and nothing after a bad length is trusted.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a Decoder over b. It does not copy b; buffers it
// returns alias b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Err returns the first error, or nil.
func (d *Decoder) Err() error { return d.err }

// Offset returns how many bytes have been consumed.
func (d *Decoder) Offset() int { return d.off }

// Remaining returns how many bytes are left unread.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

func (d *Decoder) fail(field string, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("%s at offset %d: %w", field, d.off, err)
	}
}

// take returns the next n bytes, or nil after recording ErrTruncated.
func (d *Decoder) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > d.Remaining() {
		d.fail(field, ErrTruncated)
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Int32 reads a jute int.
func (d *Decoder) Int32() int32 {
	b := d.take("int", 4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Int64 reads a jute long.
func (d *Decoder) Int64() int64 {
	b := d.take("long", 8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a jute boolean: one byte, any non-zero value true, as Java's
// DataInput.readBoolean reads it.
func (d *Decoder) Bool() bool {
	b := d.take("boolean", 1)
	return b != nil && b[0] != 0
}

// length reads an int32 length prefix that must be -1 (null) or fit, times
// unit bytes per element, in what remains. The check comes before any
// allocation, which is what keeps a 12-byte input claiming 2^31 elements
// from allocating gigabytes.
func (d *Decoder) length(field string, unit int) (n int, null bool) {
	l := d.Int32()
	if d.err != nil {
		return 0, false
	}
	if l == -1 {
		return 0, true
	}
	if l < 0 || int64(l)*int64(unit) > int64(d.Remaining()) {
		d.fail(field, fmt.Errorf("%w: %d", ErrBadLength, l))
		return 0, false
	}
	return int(l), false
}

// Buffer reads a jute buffer: int32 length, -1 for null (returned as nil),
// then that many bytes. An empty buffer is a non-nil empty slice, so
// encoding it again gives the same bytes. The result aliases the input.
func (d *Decoder) Buffer() []byte {
	n, null := d.length("buffer", 1)
	if null || d.err != nil {
		return nil
	}
	b := d.take("buffer", n)
	if b == nil {
		return nil
	}
	// Cap the slice so a caller appending to it cannot scribble over the
	// fields that follow it in the frame.
	return b[:n:n]
}

// UString reads a jute ustring (encoded like a buffer, UTF-8). Null reads
// as "": ZooKeeper never distinguishes a null path from an empty one, and
// Go strings have no null. (Not String: that would make a Decoder a
// fmt.Stringer, and printing one would consume its input.)
func (d *Decoder) UString() string {
	n, null := d.length("ustring", 1)
	if null || d.err != nil {
		return ""
	}
	return string(d.take("ustring", n))
}

// VectorLen reads a vector's element count, -1 meaning null. minElem is
// the fewest bytes one element can take; the count must fit in what
// remains, so a caller may allocate count elements.
func (d *Decoder) VectorLen(minElem int) (n int, null bool) {
	return d.length("vector", minElem)
}

// UStrings reads a vector<ustring>; null is nil, empty is non-nil.
func (d *Decoder) UStrings() []string {
	n, null := d.VectorLen(4)
	if null || d.err != nil {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.UString()
	}
	if d.err != nil {
		return nil
	}
	return out
}

// Encoder appends jute primitives to a byte slice.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that appends to dst.
func NewEncoder(dst []byte) *Encoder { return &Encoder{buf: dst} }

// Bytes returns everything appended so far (including dst's contents).
func (e *Encoder) Bytes() []byte { return e.buf }

// Int32 appends a jute int.
func (e *Encoder) Int32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Int64 appends a jute long.
func (e *Encoder) Int64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Bool appends a jute boolean (0 or 1).
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Buffer appends a jute buffer; nil is written as null (-1).
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int32(-1)
		return
	}
	e.Int32(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// UString appends a jute ustring. "" is written as empty, never null:
// ZooKeeper's clients read both the same way.
func (e *Encoder) UString(s string) {
	e.Int32(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// VectorLen appends a vector's count; null writes -1.
func (e *Encoder) VectorLen(n int, null bool) {
	if null {
		e.Int32(-1)
		return
	}
	e.Int32(int32(n))
}

// UStrings appends a vector<ustring>; nil is written as null.
func (e *Encoder) UStrings(ss []string) {
	e.VectorLen(len(ss), ss == nil)
	for _, s := range ss {
		e.UString(s)
	}
}

// Record appends r.
func (e *Encoder) Record(r Record) { r.Encode(e) }

// Encode returns r's encoding appended to dst.
func Encode(dst []byte, r Record) []byte {
	e := NewEncoder(dst)
	r.Encode(e)
	return e.Bytes()
}

// Decode reads r from b. Trailing bytes are not an error: ZooKeeper's
// server ignores them too, and a newer client may append fields.
func Decode(b []byte, r Record) error {
	return r.Decode(NewDecoder(b))
}
