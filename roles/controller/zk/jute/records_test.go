package jute

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every request and response record survives encode then decode, and
// every op a client sends has a request record.
func TestRecordsRoundTrip(t *testing.T) {
	check := func(t *testing.T, in Record, fresh func() (Record, error)) {
		b := Encode(nil, in)
		out, err := fresh()
		require.NoError(t, err)
		d := NewDecoder(b)
		require.NoError(t, out.Decode(d))
		require.Zero(t, d.Remaining())
		require.Equal(t, in, out)
		require.Equal(t, b, Encode(nil, out))
		// Every proper prefix fails cleanly (records with optional or no
		// fields aside).
		for i := 0; i < len(b); i++ {
			out, _ := fresh()
			require.Error(t, Decode(b[:i], out), "prefix %d of %d", i, len(b))
		}
	}
	for op, r := range sampleRequests() {
		t.Run("request "+op.String(), func(t *testing.T) {
			check(t, r, func() (Record, error) { return NewRequest(op) })
		})
	}
	for op, r := range sampleResponses() {
		t.Run("response "+op.String(), func(t *testing.T) {
			check(t, r, func() (Record, error) { return NewResponse(op) })
		})
	}
	for _, r := range []Record{
		&RequestHeader{Xid: 7, Type: OpCreate},
		&ReplyHeader{Xid: 7, Zxid: 1 << 40, Err: CodeNodeExists},
		&WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/w"},
		&MultiHeader{Type: OpCheck, Done: false, Err: -1},
		&ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 5, TimeOut: 30000, SessionID: 9,
			Passwd: make([]byte, PasswordLen), ReadOnly: true, HasReadOnly: true},
		&ConnectResponse{TimeOut: 4000, SessionID: 9, Passwd: []byte("0123456789abcdef")},
	} {
		b := Encode(nil, r)
		out, err := NewRecordLike(r)
		require.NoError(t, err)
		require.NoError(t, Decode(b, out))
		require.Equal(t, r, out)
	}
}

// NewRecordLike returns a zero record of r's type (test helper).
func NewRecordLike(r Record) (Record, error) {
	switch r.(type) {
	case *RequestHeader:
		return &RequestHeader{}, nil
	case *ReplyHeader:
		return &ReplyHeader{}, nil
	case *WatcherEvent:
		return &WatcherEvent{}, nil
	case *MultiHeader:
		return &MultiHeader{}, nil
	case *ConnectRequest:
		return &ConnectRequest{}, nil
	case *ConnectResponse:
		return &ConnectResponse{}, nil
	}
	return nil, errors.New("unknown record")
}

// The readOnly flag is optional: clients before 3.4 (and go-zookeeper)
// omit it, and the server must not invent it in its answer.
func TestConnectRequestOptionalReadOnly(t *testing.T) {
	without := &ConnectRequest{LastZxidSeen: 1, TimeOut: 10000, Passwd: make([]byte, 16)}
	b := Encode(nil, without)
	require.Len(t, b, 4+8+4+8+4+16)
	var got ConnectRequest
	require.NoError(t, Decode(b, &got))
	require.False(t, got.HasReadOnly)
	require.False(t, got.ReadOnly)

	with := append(b, 1)
	require.NoError(t, Decode(with, &got))
	require.True(t, got.HasReadOnly)
	require.True(t, got.ReadOnly)

	resp := &ConnectResponse{TimeOut: 10000, SessionID: 3, Passwd: make([]byte, 16), HasReadOnly: got.HasReadOnly}
	require.Len(t, Encode(nil, resp), 4+4+8+4+16+1)
	resp.HasReadOnly = false
	require.Len(t, Encode(nil, resp), 4+4+8+4+16)
}

func TestDecodeRequest(t *testing.T) {
	frame := AppendFrame(nil, &RequestHeader{Xid: 3, Type: OpSetData},
		&SetDataRequest{Path: "/x", Data: []byte("d"), Version: 2})[4:]
	req, err := DecodeRequest(frame)
	require.NoError(t, err)
	require.Equal(t, RequestHeader{Xid: 3, Type: OpSetData}, req.Header)
	require.Equal(t, &SetDataRequest{Path: "/x", Data: []byte("d"), Version: 2}, req.Body)

	// An unknown op still yields the header, so the server can answer it.
	frame = Encode(nil, &RequestHeader{Xid: 4, Type: OpReconfig})
	req, err = DecodeRequest(frame)
	var unk *UnknownOpError
	require.True(t, errors.As(err, &unk))
	require.Equal(t, OpReconfig, unk.Op)
	require.Equal(t, int32(4), req.Header.Xid)

	_, err = DecodeRequest([]byte{0, 0, 0, 1, 0, 0, 0})
	require.ErrorIs(t, err, ErrTruncated)

	frame = Encode(nil, &RequestHeader{Xid: 5, Type: OpCreate})
	frame = append(frame, 0, 0, 0, 9, '/')
	_, err = DecodeRequest(frame)
	require.ErrorIs(t, err, ErrBadLength)
}

func TestMultiRequestErrors(t *testing.T) {
	// No end header.
	b := Encode(nil, &MultiHeader{Type: OpDelete, Err: -1})
	b = Encode(b, &PathVersionRequest{Path: "/a", Version: 1})
	require.ErrorIs(t, Decode(b, &MultiRequest{}), ErrTruncated)

	// An op that cannot be in a multi.
	b = Encode(nil, &MultiHeader{Type: OpSync, Err: -1})
	err := Decode(b, &MultiRequest{})
	var unk *UnknownOpError
	require.True(t, errors.As(err, &unk))
	require.Equal(t, OpSync, unk.Op)

	// Empty multi is legal: just the end header.
	var m MultiRequest
	require.NoError(t, Decode(Encode(nil, &MultiRequest{}), &m))
	require.Empty(t, m.Ops)
}
