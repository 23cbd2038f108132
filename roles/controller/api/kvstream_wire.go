package api

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
)

// The KV stream's frames (docs/API.md, "KV stream"). Every frame is a
// 4-byte big-endian length of what follows, then that many bytes.
//
// A request:
//
//	u32 id | u8 op | u8 flags | u16 key length | key | op's fields
//
// put: [i64 prev_revision when flags has streamHasPrev] value (the rest);
// get: nothing (flags may hold streamSerializable); delete: nothing.
//
// An answer:
//
//	u32 id | u16 status | u8 hint length | hint | body
//
// The status is the one the HTTP route would answer; the hint is the
// leader's API address when another controller leads (LeaderHeader). A 200
// body is put: i64 revision; delete: i64 revision, i64 deleted; get: i64
// revision, i64 create_revision, i64 mod_revision, i64 version, value (the
// rest). Any other status carries the JSON error body the route would.

// Stream ops.
const (
	streamPut    byte = 1
	streamGet    byte = 2
	streamDelete byte = 3
)

// Stream request flags.
const (
	streamHasPrev      byte = 1 << 0
	streamSerializable byte = 1 << 1
)

const (
	// streamHeaderBytes is a request's fixed part after its length.
	streamHeaderBytes = 4 + 1 + 1 + 2
	// maxStreamFrame bounds a request frame (after its length): the
	// fixed part, the largest key, a prev_revision and the largest value.
	// A longer length closes the connection: the stream cannot be read
	// past a frame it will not hold.
	maxStreamFrame = streamHeaderBytes + MaxKeyBytes + 8 + MaxValueBytes
)

// streamReq is a decoded request frame. Key and Value alias the frame.
type streamReq struct {
	ID      uint32
	Op      byte
	Flags   byte
	Key     string
	Prev    int64
	HasPrev bool
	Value   []byte
}

// decodeStreamReq decodes one request frame (without its length). An
// error that comes with id > 0 is answered with that id; the frame was
// whole, so the stream goes on.
func decodeStreamReq(b []byte) (streamReq, error) {
	if len(b) < streamHeaderBytes {
		return streamReq{}, badRequest("stream frame of %d bytes is shorter than the %d-byte request header", len(b), streamHeaderBytes)
	}
	r := streamReq{ID: binary.BigEndian.Uint32(b), Op: b[4], Flags: b[5]}
	klen := int(binary.BigEndian.Uint16(b[6:]))
	rest := b[streamHeaderBytes:]
	if klen > len(rest) {
		return r, badRequest("stream frame names a %d-byte key but holds %d bytes after its header", klen, len(rest))
	}
	r.Key, rest = string(rest[:klen]), rest[klen:]
	switch r.Op {
	case streamPut:
		if r.Flags&^streamHasPrev != 0 {
			return r, badRequest("unknown flags %#x on a stream put", r.Flags)
		}
		if r.Flags&streamHasPrev != 0 {
			if len(rest) < 8 {
				return r, badRequest("stream put says it has a prev_revision but holds %d bytes after its key", len(rest))
			}
			r.Prev, r.HasPrev = int64(binary.BigEndian.Uint64(rest)), true
			rest = rest[8:]
			if r.Prev < 0 {
				return r, badRequest("prev_revision must be a non-negative integer, got %d", r.Prev)
			}
		}
		if len(rest) > MaxValueBytes {
			return r, tooLarge("value is larger than the %d-byte limit", MaxValueBytes)
		}
		r.Value = rest
	case streamGet, streamDelete:
		if r.Op == streamGet && r.Flags&^streamSerializable != 0 || r.Op == streamDelete && r.Flags != 0 {
			return r, badRequest("unknown flags %#x on a stream op %d", r.Flags, r.Op)
		}
		if len(rest) != 0 {
			return r, badRequest("stream op %d carries %d bytes after its key", r.Op, len(rest))
		}
	default:
		return r, badRequest("unknown stream op %d: 1 put, 2 get, 3 delete", r.Op)
	}
	return r, nil
}

// appendStreamAnswer appends an answer frame (with its length) to dst.
func appendStreamAnswer(dst []byte, id uint32, status int, hint string, body []byte) []byte {
	if len(hint) > 255 {
		hint = "" // a hint is optional; an address this long names nothing a client lists
	}
	n := 4 + 2 + 1 + len(hint) + len(body)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, id)
	dst = binary.BigEndian.AppendUint16(dst, uint16(status))
	dst = append(dst, byte(len(hint)))
	dst = append(dst, hint...)
	return append(dst, body...)
}

// streamErrorBody is the JSON body of an answer that is not a 200, and
// its status.
func streamErrorBody(err error) (int, []byte) {
	ae := errorFor(err)
	b, mErr := json.Marshal(ae)
	if mErr != nil {
		return http.StatusInternalServerError, []byte(`{"error":"encode error","code":"internal"}`)
	}
	return ae.Status, b
}

// appendInts appends vs, big-endian, to dst.
func appendInts(dst []byte, vs ...int64) []byte {
	for _, v := range vs {
		dst = binary.BigEndian.AppendUint64(dst, uint64(v))
	}
	return dst
}
