package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Wire format (version 1), all integers big-endian:
//
//	stream header: magic "CRRL" | version u8 (=1) | kind u8 | from u64 |
//	               cluster-id length u16 | cluster-id bytes (<= 255)
//	frame:         length u32 | proto-marshalled raftpb.Message
//
// A message stream (kind 1, unidirectional) carries any number of frames.
// A snapshot stream (kind 2, bidirectional) carries exactly one MsgSnap frame;
// the receiver answers with one status byte (ackOK or ackFail) after
// Handler.Process returns, so ReportSnapshot(Finish) means "processed".

const (
	headerMagic   = "CRRL"
	headerVersion = 1

	streamKindMessages = 1
	streamKindSnapshot = 2

	maxClusterIDLen = 255
	headerFixedLen  = 4 + 1 + 1 + 8 + 2

	// maxMessageFrame bounds ordinary raft messages. raft's MaxSizePerMsg
	// (about 1 MiB) plus one oversized entry stays well below it.
	maxMessageFrame = 16 << 20
	// maxSnapshotFrame bounds a MsgSnap carrying the whole state machine.
	maxSnapshotFrame = 256 << 20

	// readChunk is how much of a frame is allocated up front: larger frames
	// grow as bytes actually arrive, so a lying length prefix cannot make us
	// allocate the maximum before the data exists.
	readChunk = 64 << 10

	ackOK   byte = 1
	ackFail byte = 0
)

// errFrameTooLarge is returned when a length prefix exceeds the limit.
var errFrameTooLarge = errors.New("frame too large")

// streamHeader is the first thing written on every stream.
type streamHeader struct {
	kind      byte
	from      uint64
	clusterID string
}

func (h streamHeader) marshal() ([]byte, error) {
	if len(h.clusterID) > maxClusterIDLen {
		return nil, fmt.Errorf("cluster id is %d bytes, max %d", len(h.clusterID), maxClusterIDLen)
	}
	b := make([]byte, 0, headerFixedLen+len(h.clusterID))
	b = append(b, headerMagic...)
	b = append(b, headerVersion, h.kind)
	b = binary.BigEndian.AppendUint64(b, h.from)
	b = binary.BigEndian.AppendUint16(b, uint16(len(h.clusterID)))
	b = append(b, h.clusterID...)
	return b, nil
}

// readHeader decodes a stream header; it returns an error (never panics) on
// bad magic, unknown version or kind, or a truncated header.
func readHeader(r io.Reader) (streamHeader, error) {
	var fixed [headerFixedLen]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return streamHeader{}, fmt.Errorf("read stream header: %w", err)
	}
	if string(fixed[:4]) != headerMagic {
		return streamHeader{}, fmt.Errorf("bad stream magic %q", fixed[:4])
	}
	if v := fixed[4]; v != headerVersion {
		return streamHeader{}, fmt.Errorf("unsupported stream version %d", v)
	}
	h := streamHeader{kind: fixed[5], from: binary.BigEndian.Uint64(fixed[6:14])}
	if h.kind != streamKindMessages && h.kind != streamKindSnapshot {
		return streamHeader{}, fmt.Errorf("unknown stream kind %d", h.kind)
	}
	n := int(binary.BigEndian.Uint16(fixed[14:16]))
	if n > maxClusterIDLen {
		return streamHeader{}, fmt.Errorf("cluster id length %d exceeds %d", n, maxClusterIDLen)
	}
	if n > 0 {
		id := make([]byte, n)
		if _, err := io.ReadFull(r, id); err != nil {
			return streamHeader{}, fmt.Errorf("read cluster id: %w", err)
		}
		h.clusterID = string(id)
	}
	return h, nil
}

// readFrame reads one length-prefixed frame of at most max bytes. buf is
// reused when large enough. io.EOF is returned only for a clean end before
// the length prefix; a truncated frame is io.ErrUnexpectedEOF.
func readFrame(r io.Reader, max uint32, buf []byte) ([]byte, error) {
	var lp [4]byte
	if _, err := io.ReadFull(r, lp[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lp[:])
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, max)
	}
	if int(n) <= cap(buf) || n <= readChunk {
		if int(n) > cap(buf) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("read %d-byte frame: %w", n, noEOF(err))
		}
		return buf, nil
	}
	var bb bytes.Buffer
	bb.Grow(readChunk)
	got, err := io.CopyN(&bb, r, int64(n))
	if err != nil {
		return nil, fmt.Errorf("read %d-byte frame after %d bytes: %w", n, got, noEOF(err))
	}
	return bb.Bytes(), nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeMessage unmarshals a frame payload; errors, never panics.
func decodeMessage(b []byte) (*raftpb.Message, error) {
	m := &raftpb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("decode raft message: %w", err)
	}
	return m, nil
}
