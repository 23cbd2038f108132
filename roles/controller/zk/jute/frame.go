package jute

import (
	"encoding/binary"
	"fmt"
	"io"
)

// DefaultMaxFrame is ZooKeeper's default jute.maxbuffer (0xfffff bytes,
// one byte short of 1 MiB): the largest frame a server accepts unless
// configured otherwise.
const DefaultMaxFrame = 0xfffff

// FrameReader reads length-prefixed frames: a 4-byte big-endian length,
// then that many bytes. It checks the length against its maximum before
// allocating, so a peer claiming 2 GiB costs nothing but the error.
//
// The first frame of a connection may instead be a four-letter word; a
// server reads it with ReadPrefix, checks FourLetterWord, and otherwise
// passes the prefix to ReadBody.
type FrameReader struct {
	r   io.Reader
	max int
	buf []byte
}

// NewFrameReader returns a reader of frames of at most max bytes (not
// counting the prefix). max <= 0 means DefaultMaxFrame.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &FrameReader{r: r, max: max}
}

// Max returns the largest frame body the reader accepts.
func (f *FrameReader) Max() int { return f.max }

// ReadPrefix reads the 4 bytes that start a frame. io.EOF means the peer
// closed cleanly between frames; io.ErrUnexpectedEOF means mid-prefix.
func (f *FrameReader) ReadPrefix() ([4]byte, error) {
	var p [4]byte
	if _, err := io.ReadFull(f.r, p[:]); err != nil {
		if err == io.EOF {
			return p, io.EOF // the peer is done; callers compare with ==
		}
		return p, fmt.Errorf("read frame length: %w", err)
	}
	return p, nil
}

// ReadBody reads the body whose length prefix is p. The returned slice is
// reused by the next call, and buffers a Decoder reads from it alias it:
// copy what outlives the request (znode data, say) before reading on.
func (f *FrameReader) ReadBody(p [4]byte) ([]byte, error) {
	n := int32(binary.BigEndian.Uint32(p[:]))
	if n < 0 || int64(n) > int64(f.max) {
		return nil, &FrameTooLargeError{Length: n, Max: f.max}
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n)
	}
	b := f.buf[:n]
	if _, err := io.ReadFull(f.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a length promised bytes that never came
		}
		return nil, fmt.Errorf("read frame body of %d bytes: %w", n, err)
	}
	return b, nil
}

// ReadFrame reads one whole frame and returns its body, valid until the
// next call.
func (f *FrameReader) ReadFrame() ([]byte, error) {
	p, err := f.ReadPrefix()
	if err != nil {
		return nil, err
	}
	return f.ReadBody(p)
}

// AppendFrame appends one frame holding the records in order (a
// ReplyHeader and a response, say) to dst: the length prefix is reserved
// first and filled in after, so the records are encoded once.
func AppendFrame(dst []byte, records ...Record) []byte {
	start := len(dst)
	e := NewEncoder(append(dst, 0, 0, 0, 0))
	for _, r := range records {
		if r != nil {
			r.Encode(e)
		}
	}
	out := e.Bytes()
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
	return out
}
