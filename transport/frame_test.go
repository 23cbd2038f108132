package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// appendFrame appends a length-prefixed frame carrying payload to dst.
func appendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []streamHeader{
		{kind: streamKindMessages, from: 1},
		{kind: streamKindSnapshot, from: 1<<64 - 1, clusterID: "c-0123456789"},
	} {
		b, err := h.marshal()
		require.NoError(t, err)
		got, err := readHeader(bytes.NewReader(b))
		require.NoError(t, err)
		require.Equal(t, h, got)
	}
	_, err := streamHeader{kind: streamKindMessages, clusterID: string(make([]byte, 256))}.marshal()
	require.Error(t, err)
}

func TestHeaderErrors(t *testing.T) {
	good, err := streamHeader{kind: streamKindMessages, from: 7, clusterID: "abc"}.marshal()
	require.NoError(t, err)
	mutate := func(i int, v byte) []byte {
		b := bytes.Clone(good)
		b[i] = v
		return b
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     mutate(0, 'X'),
		"version":   mutate(4, 9),
		"kind":      mutate(5, 0),
		"truncated": good[:len(good)-1],
		"idlen":     append(bytes.Clone(good[:14]), 0xff, 0xff),
	} {
		_, err := readHeader(bytes.NewReader(b))
		require.Error(t, err, name)
	}
}

func TestFrameRoundTripAndLimits(t *testing.T) {
	small := []byte("hello")
	big := bytes.Repeat([]byte{0xab}, 3*readChunk+17) // exercises the incremental path
	var stream []byte
	stream = appendFrame(stream, small)
	stream = appendFrame(stream, nil)
	stream = appendFrame(stream, big)
	r := bytes.NewReader(stream)
	var buf []byte
	for _, want := range [][]byte{small, {}, big} {
		got, err := readFrame(r, 1<<20, buf)
		require.NoError(t, err)
		require.Equal(t, want, got)
		buf = got
	}
	_, err := readFrame(r, 1<<20, nil)
	require.ErrorIs(t, err, io.EOF)

	_, err = readFrame(bytes.NewReader(appendFrame(nil, big)), 100, nil)
	require.ErrorIs(t, err, errFrameTooLarge)
	// A huge claimed length with no data is an error, not a huge allocation.
	_, err = readFrame(bytes.NewReader([]byte{0x0f, 0xff, 0xff, 0xff, 1, 2}), maxSnapshotFrame, nil)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	_, err = readFrame(bytes.NewReader([]byte{0, 0, 0, 5, 1}), 10, nil)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	_, err = readFrame(bytes.NewReader([]byte{0, 0}), 10, nil)
	require.True(t, errors.Is(err, io.ErrUnexpectedEOF))
}

func TestEncodeOutDecodes(t *testing.T) {
	m := snapMsg(1, 2, []byte("state"))
	out, err := encodeOut(m)
	require.NoError(t, err)
	require.True(t, out.snap)
	frame, err := readFrame(bytes.NewReader(out.data), maxSnapshotFrame, nil)
	require.NoError(t, err)
	got, err := decodeMessage(frame)
	require.NoError(t, err)
	require.True(t, proto.Equal(m, got))
}

// Message buffers are reused once the peer has copied them: a recycled
// buffer, whatever it held, encodes the next message exactly, and after
// the first the encoding allocates next to nothing of the message's size.
func TestEncodeOutReusesBuffers(t *testing.T) {
	big := msg(raftpb.MsgApp, 1, 2, 3)
	big.Entries = []*raftpb.Entry{{Index: new(uint64(4)), Term: new(uint64(3)), Data: bytes.Repeat([]byte("x"), 8000)}}
	small := msg(raftpb.MsgHeartbeat, 1, 2, 3)
	for _, m := range []*raftpb.Message{big, small, big, small} {
		out, err := encodeOut(m)
		require.NoError(t, err)
		frame, err := readFrame(bytes.NewReader(out.data), maxMessageFrame, nil)
		require.NoError(t, err)
		got, err := decodeMessage(frame)
		require.NoError(t, err)
		require.True(t, proto.Equal(m, got))
		putOutBuf(out.data)
	}
	var bytesPer uint64
	for range 3 { // the least of three: the pool may be emptied by a collection
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			out, _ := encodeOut(big)
			putOutBuf(out.data)
		}
		runtime.ReadMemStats(&after)
		if b := (after.TotalAlloc - before.TotalAlloc) / 100; bytesPer == 0 || b < bytesPer {
			bytesPer = b
		}
	}
	// Half the message: under -race the pool drops a quarter of what it is given.
	require.Less(t, bytesPer, uint64(4096), "encoding an 8 KB message allocated %d bytes", bytesPer)
}

func FuzzReadFrame(f *testing.F) {
	b, _ := proto.Marshal(msg(raftpb.MsgApp, 1, 2, 3))
	f.Add(appendFrame(nil, b))
	f.Add(appendFrame(appendFrame(nil, []byte("x")), nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			frame, err := readFrame(r, 1<<16, nil)
			if err != nil {
				return
			}
			if len(frame) > 1<<16 {
				t.Fatalf("frame of %d bytes exceeds limit", len(frame))
			}
			// Whatever the bytes, decoding must return, not panic.
			if m, err := decodeMessage(frame); err == nil {
				if _, err := proto.Marshal(m); err != nil {
					t.Fatalf("decoded message does not re-marshal: %v", err)
				}
			}
		}
	})
}

func FuzzReadHeader(f *testing.F) {
	good, _ := streamHeader{kind: streamKindMessages, from: 3, clusterID: "c"}.marshal()
	f.Add(good)
	f.Add([]byte("CRRL"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readHeader(bytes.NewReader(data))
		if err != nil {
			return
		}
		b, err := h.marshal()
		if err != nil {
			t.Fatalf("decoded header does not re-marshal: %v", err)
		}
		if !bytes.Equal(b, data[:len(b)]) {
			t.Fatalf("header round trip mismatch")
		}
	})
}
