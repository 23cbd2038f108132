package jute

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime/metrics"
	"testing"
)

// The fuzz targets hold the decoders to three rules: never panic; never
// take more than the input justifies (every successful decode re-encodes
// to no more bytes than it consumed, and every length is checked against
// the bytes left before anything is allocated, so memory is a constant
// factor of the input); and decode is a fixpoint of encode: whatever
// decodes, encoded and decoded again, gives the same value and the same
// bytes. Run one with, for example:
//
//	go test -run XXX -fuzz FuzzDecodeRequest -fuzztime 20s ./roles/controller/zk/jute/

// heapAllocs returns the bytes allocated on the heap so far. It reads
// runtime/metrics, not MemStats, because that does not stop the world; the
// price is that small allocations are counted a span at a time, so only
// large ones (the kind a lying length would cause) show up at once.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocSlack covers the lag in heapAllocs and the fuzz engine's own work.
const allocSlack = 1 << 20

// checkAllocs runs decode and fails if it allocated more than a constant
// factor of its input (plus slack): a decoded value costs at most a few
// times its encoding (a 4-byte empty string is a 16-byte string header,
// a 12-byte ACL a 40-byte struct).
func checkAllocs(t *testing.T, in []byte, decode func()) {
	t.Helper()
	before := heapAllocs()
	decode()
	if got := heapAllocs() - before; got > uint64(16*len(in))+allocSlack {
		t.Fatalf("decoding %d bytes allocated %d", len(in), got)
	}
}

// roundTrip checks the fixpoint rule for a record decoded from in, where
// fresh returns an empty record of the same kind.
func roundTrip(t *testing.T, in []byte, got Record, fresh func() Record) {
	t.Helper()
	enc := Encode(nil, got)
	if len(enc) > len(in) {
		t.Fatalf("%T re-encodes to %d bytes from %d input bytes", got, len(enc), len(in))
	}
	again := fresh()
	if err := Decode(enc, again); err != nil {
		t.Fatalf("%T: re-decoding its own encoding: %v\nvalue %#v", got, err, got)
	}
	if !reflect.DeepEqual(got, again) {
		t.Fatalf("%T round trip differs:\n first %#v\nsecond %#v", got, got, again)
	}
	if enc2 := Encode(nil, again); !bytes.Equal(enc, enc2) {
		t.Fatalf("%T encodings differ:\n%x\n%x", got, enc, enc2)
	}
}

func FuzzFrameReader(f *testing.F) {
	f.Add(AppendFrame(AppendFrame(nil, &PathRequest{Path: "/a"}), &Empty{}), uint16(64))
	f.Add([]byte("ruok"), uint16(0))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff}, uint16(100))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0}, uint16(100))
	f.Add([]byte{0, 0, 0, 10, 1, 2}, uint16(100))
	f.Fuzz(func(t *testing.T, stream []byte, max uint16) {
		fr := NewFrameReader(bytes.NewReader(stream), int(max))
		var read []byte
		for {
			b, err := fr.ReadFrame()
			if cap(fr.buf) > fr.Max() {
				t.Fatalf("allocated %d bytes with a maximum of %d", cap(fr.buf), fr.Max())
			}
			if err != nil {
				var tl *FrameTooLargeError
				switch {
				case err == io.EOF:
					if !bytes.Equal(read, stream) {
						t.Fatalf("clean EOF after %d of %d bytes", len(read), len(stream))
					}
				case errors.As(err, &tl):
					if tl.Length >= 0 && int(tl.Length) <= fr.Max() {
						t.Fatalf("refused length %d within maximum %d", tl.Length, fr.Max())
					}
				case errors.Is(err, io.ErrUnexpectedEOF):
				default:
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(b) > fr.Max() {
				t.Fatalf("frame of %d bytes over maximum %d", len(b), fr.Max())
			}
			read = AppendFrame(read, rawRecord(b))
			if !bytes.HasPrefix(stream, read) {
				t.Fatal("frames do not reassemble the stream")
			}
		}
	})
}

// rawRecord encodes as its bytes, for reassembling frames.
type rawRecord []byte

func (r rawRecord) Encode(e *Encoder)       { e.buf = append(e.buf, r...) }
func (r rawRecord) Decode(d *Decoder) error { return nil }

func requestSeeds() [][]byte {
	var seeds [][]byte
	xid := int32(1)
	for op, r := range sampleRequests() {
		seeds = append(seeds, AppendFrame(nil, &RequestHeader{Xid: xid, Type: op}, r)[4:])
		xid++
	}
	return seeds
}

// FuzzDecodeRequest decodes a client frame (header and body) the way the
// server will, dispatching on the opcode in the header.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range requestSeeds() {
		f.Add(s)
	}
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 14, 0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var req Request
		var err error
		checkAllocs(t, frame, func() { req, err = DecodeRequest(frame) })
		if err != nil {
			var unk *UnknownOpError
			if !errors.As(err, &unk) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBadLength) {
				t.Fatalf("untyped decode error: %v", err)
			}
			return
		}
		body := Encode(nil, req.Body)
		if len(body)+8 > len(frame) {
			t.Fatalf("%v body re-encodes to %d bytes from a %d-byte frame", req.Header.Type, len(body), len(frame))
		}
		again, err := DecodeRequest(AppendFrame(nil, &req.Header, req.Body)[4:])
		if err != nil {
			t.Fatalf("re-decoding %v: %v", req.Header.Type, err)
		}
		if !reflect.DeepEqual(req, again) {
			t.Fatalf("round trip differs:\n first %#v\nsecond %#v", req.Body, again.Body)
		}
		roundTrip(t, frame[8:], req.Body, func() Record { r, _ := NewRequest(req.Header.Type); return r })
	})
}

// FuzzDecodeResponse decodes reply bodies by opcode, as a client (the
// planned `corral zk import`) would.
func FuzzDecodeResponse(f *testing.F) {
	for op, r := range sampleResponses() {
		f.Add(int32(op), Encode(nil, r))
	}
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		r, err := NewResponse(Op(op))
		if err != nil {
			return
		}
		checkAllocs(t, body, func() { err = Decode(body, r) })
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBadLength) {
				var unk *UnknownOpError
				if !errors.As(err, &unk) {
					t.Fatalf("untyped decode error: %v", err)
				}
			}
			return
		}
		roundTrip(t, body, r, func() Record { r, _ := NewResponse(Op(op)); return r })
	})
}

func FuzzConnectRequest(f *testing.F) {
	base := &ConnectRequest{LastZxidSeen: 7, TimeOut: 30000, SessionID: 0x55, Passwd: make([]byte, PasswordLen)}
	f.Add(Encode(nil, base))
	base.HasReadOnly, base.ReadOnly = true, true
	f.Add(Encode(nil, base))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var r ConnectRequest
		var err error
		checkAllocs(t, in, func() { err = Decode(in, &r) })
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBadLength) {
				t.Fatalf("untyped decode error: %v", err)
			}
			return
		}
		roundTrip(t, in, &r, func() Record { return &ConnectRequest{} })
		var resp ConnectResponse
		if err := Decode(in, &resp); err == nil {
			roundTrip(t, in, &resp, func() Record { return &ConnectResponse{} })
		}
	})
}

func FuzzMultiRequest(f *testing.F) {
	f.Add(Encode(nil, sampleRequests()[OpMulti]))
	f.Add(Encode(nil, sampleRequests()[OpMultiRead]))
	f.Add(Encode(nil, &MultiRequest{}))
	f.Add(Encode(nil, &MultiHeader{Type: OpCreate, Err: -1}))
	f.Fuzz(func(t *testing.T, in []byte) {
		var r MultiRequest
		var err error
		checkAllocs(t, in, func() { err = Decode(in, &r) })
		if err != nil {
			var unk *UnknownOpError
			if !errors.As(err, &unk) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBadLength) {
				t.Fatalf("untyped decode error: %v", err)
			}
			return
		}
		if len(r.Ops)*multiHeaderLen > len(in) {
			t.Fatalf("%d ops from %d bytes", len(r.Ops), len(in))
		}
		roundTrip(t, in, &r, func() Record { return &MultiRequest{} })
		var resp MultiResponse
		if err := Decode(in, &resp); err == nil {
			roundTrip(t, in, &resp, func() Record { return &MultiResponse{} })
		}
	})
}
