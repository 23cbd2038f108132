package client

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The KV stream's frames, as the controller's API defines them (docs/API.md,
// "KV stream"): a 4-byte big-endian length, then
//
//	request: u32 id | u8 op | u8 flags | u16 key length | key | [i64 prev_revision] | value
//	answer:  u32 id | u16 status | u8 hint length | hint | body

// streamProtocol is the Upgrade token of the KV stream.
const streamProtocol = "corral-kv/1"

// Stream ops and flags.
const (
	streamPut    byte = 1
	streamGet    byte = 2
	streamDelete byte = 3

	streamHasPrev      byte = 1 << 0
	streamSerializable byte = 1 << 1
)

// maxStreamAnswer bounds an answer frame: a get of the largest value (1 MiB)
// with its revisions, or an error body, with room to spare. A longer one
// ends the stream.
const maxStreamAnswer = 1<<20 + 64<<10

// The API's limits on keys and values: a call beyond them goes over HTTP,
// whose answer names the limit, because a stream frame larger than the
// controller takes would end the whole stream.
const (
	maxStreamKey   = 1024
	maxStreamValue = 1 << 20
)

// streamCall is a KV operation the client may send over a stream instead of
// an HTTP request (unless Config.HTTPOnly).
type streamCall struct {
	op    byte
	flags byte
	key   string
	prev  int64
	value []byte
	// done decodes a 200 answer's body.
	done func(body []byte) error
}

// fits reports whether sc may travel as a stream frame.
func (sc *streamCall) fits() bool {
	return len(sc.key) <= maxStreamKey && len(sc.value) <= maxStreamValue
}

// appendStreamRequest appends sc's request frame with id to dst.
func appendStreamRequest(dst []byte, id uint32, sc *streamCall) []byte {
	n := 4 + 1 + 1 + 2 + len(sc.key) + len(sc.value)
	if sc.flags&streamHasPrev != 0 {
		n += 8
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, id)
	dst = append(dst, sc.op, sc.flags)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(sc.key)))
	dst = append(dst, sc.key...)
	if sc.flags&streamHasPrev != 0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(sc.prev))
	}
	return append(dst, sc.value...)
}

// streamAnswer is a decoded answer frame; body aliases the frame.
type streamAnswer struct {
	id     uint32
	status int
	hint   string
	body   []byte
	// err is set instead when the stream broke before the answer came.
	err error
}

// errShortAnswer is an answer frame too short for what it says it holds.
var errShortAnswer = errors.New("KV stream: answer frame shorter than its header")

// decodeStreamAnswer decodes one answer frame (without its length).
func decodeStreamAnswer(b []byte) (streamAnswer, error) {
	if len(b) < 7 {
		return streamAnswer{}, errShortAnswer
	}
	h := int(b[6])
	if len(b) < 7+h {
		return streamAnswer{}, fmt.Errorf("KV stream: answer names a %d-byte hint but holds %d bytes: %w", h, len(b)-7, errShortAnswer)
	}
	return streamAnswer{id: binary.BigEndian.Uint32(b), status: int(binary.BigEndian.Uint16(b[4:])),
		hint: string(b[7 : 7+h]), body: b[7+h:]}, nil
}

// streamInts reads n big-endian int64s from the front of a 200 body.
func streamInts(body []byte, n int) ([]int64, error) {
	if len(body) < 8*n {
		return nil, fmt.Errorf("KV stream: a %d-byte answer where %d revisions were due", len(body), n)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(body[8*i:]))
	}
	return out, nil
}
