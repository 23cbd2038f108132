package jute

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFrameRoundTrip(t *testing.T) {
	hdr := &ReplyHeader{Xid: 5, Zxid: 9, Err: CodeOK}
	body := &PathResponse{Path: "/a"}
	var stream []byte
	stream = AppendFrame(stream, hdr, body)
	stream = AppendFrame(stream, &ReplyHeader{Xid: XidPing, Zxid: 9})
	fr := NewFrameReader(bytes.NewReader(stream), 0)
	require.Equal(t, DefaultMaxFrame, fr.Max())

	f, err := fr.ReadFrame()
	require.NoError(t, err)
	d := NewDecoder(f)
	var gotH ReplyHeader
	var gotB PathResponse
	require.NoError(t, gotH.Decode(d))
	require.NoError(t, gotB.Decode(d))
	require.Equal(t, *hdr, gotH)
	require.Equal(t, *body, gotB)
	require.Zero(t, d.Remaining())

	f, err = fr.ReadFrame()
	require.NoError(t, err)
	require.Len(t, f, 16)

	_, err = fr.ReadFrame()
	require.Equal(t, io.EOF, err, "a clean close between frames is io.EOF itself")
}

// failAfter serves its bytes and then fails the test if read again: the
// frame reader must not try to read (or allocate) a body it refused.
type failAfter struct {
	t *testing.T
	r *bytes.Reader
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		f.t.Fatal("read past the refused length prefix")
	}
	return f.r.Read(p)
}

func TestFrameTooLarge(t *testing.T) {
	for _, prefix := range [][]byte{
		{0x00, 0x10, 0x00, 0x00}, // 1 MiB, one over the default
		{0x7f, 0xff, 0xff, 0xff},
		{0xff, 0xff, 0xff, 0xff}, // -1
	} {
		fr := NewFrameReader(&failAfter{t: t, r: bytes.NewReader(prefix)}, 0)
		_, err := fr.ReadFrame()
		var tl *FrameTooLargeError
		require.True(t, errors.As(err, &tl), "got %v", err)
		require.Equal(t, DefaultMaxFrame, tl.Max)
		require.Nil(t, fr.buf, "nothing allocated for a refused frame")
	}
	// Exactly the maximum is fine.
	fr := NewFrameReader(bytes.NewReader(append([]byte{0, 0, 0, 3}, 1, 2, 3)), 3)
	b, err := fr.ReadFrame()
	require.NoError(t, err)
	require.Equal(t, []byte{1, 2, 3}, b)
}

func TestFrameTruncated(t *testing.T) {
	_, err := NewFrameReader(bytes.NewReader([]byte{0, 0}), 0).ReadFrame()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	_, err = NewFrameReader(bytes.NewReader([]byte{0, 0, 0, 4, 1}), 0).ReadFrame()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestFramePrefixThenBody(t *testing.T) {
	fr := NewFrameReader(bytes.NewReader([]byte("ruok")), 0)
	p, err := fr.ReadPrefix()
	require.NoError(t, err)
	w, ok := FourLetterWord(p)
	require.True(t, ok)
	require.Equal(t, "ruok", w)

	fr = NewFrameReader(bytes.NewReader(AppendFrame(nil, &PathRequest{Path: "/"})), 0)
	p, err = fr.ReadPrefix()
	require.NoError(t, err)
	_, ok = FourLetterWord(p)
	require.False(t, ok)
	b, err := fr.ReadBody(p)
	require.NoError(t, err)
	require.Equal(t, Encode(nil, &PathRequest{Path: "/"}), b)
}
