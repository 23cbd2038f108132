package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ErrCorrupt is wrapped by every error caused by damaged on-disk data: a bad
// record checksum, an undecodable record, a gap in the log, or a corruption
// reported by Pebble itself (sstable/WAL/MANIFEST checksums).
var ErrCorrupt = errors.New("raft log corrupt")

// Record format, version 1 (every value this package writes):
//
//	byte 0     format version (1)
//	bytes 1..4 CRC32C (Castagnoli), big-endian, of key || version || payload
//	bytes 5..  payload (proto-marshalled message, raw bytes or fixed fields)
//
// The key is covered by the checksum so that a value that ends up under the
// wrong key (e.g. an entry under another index) is detected too. Pebble has
// its own block checksums, but they do not cover bugs or damage above the
// block layer, and Pebble silently stops WAL replay at a torn tail, so the
// store checks its own records end to end.
const (
	recordVersion   byte = 1
	recordHeaderLen      = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func recordChecksum(key []byte, version byte, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, key)
	c = crc32.Update(c, castagnoli, []byte{version})
	return crc32.Update(c, castagnoli, payload)
}

// encodeRecord frames payload for storage under key.
func encodeRecord(key, payload []byte) []byte {
	out := make([]byte, recordHeaderLen+len(payload))
	copy(out[recordHeaderLen:], payload)
	return sealRecord(out, key)
}

// sealRecord fills in the header of rec, whose payload follows it.
func sealRecord(rec, key []byte) []byte {
	rec[0] = recordVersion
	binary.BigEndian.PutUint32(rec[1:5], recordChecksum(key, recordVersion, rec[recordHeaderLen:]))
	return rec
}

// decodeRecord verifies the framing and checksum of a value read under key
// and returns its payload (aliasing val). Errors wrap ErrCorrupt.
func decodeRecord(key, val []byte) ([]byte, error) {
	if len(val) < recordHeaderLen {
		return nil, fmt.Errorf("%w: %s: record too short (%d bytes)", ErrCorrupt, describeKey(key), len(val))
	}
	if val[0] != recordVersion {
		return nil, fmt.Errorf("%w: %s: unknown record version %d", ErrCorrupt, describeKey(key), val[0])
	}
	payload := val[recordHeaderLen:]
	want := binary.BigEndian.Uint32(val[1:5])
	if got := recordChecksum(key, val[0], payload); got != want {
		return nil, fmt.Errorf("%w: %s: checksum mismatch (stored %08x, computed %08x)",
			ErrCorrupt, describeKey(key), want, got)
	}
	return payload, nil
}

// encodeProtoRecord marshals m and frames it for key.
func encodeProtoRecord(key []byte, m proto.Message) ([]byte, error) {
	return appendProtoRecord(nil, key, m)
}

// appendProtoRecord is encodeProtoRecord into dst[:0], for a caller that
// reuses one buffer: the batch's Set copies the value, and a marshalled
// copy plus a framed copy per entry were a tenth of a busy leader's
// allocation.
func appendProtoRecord(dst, key []byte, m proto.Message) ([]byte, error) {
	dst = append(dst[:0], make([]byte, recordHeaderLen)...)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", describeKey(key), err)
	}
	return sealRecord(dst, key), nil
}

// decodeProtoRecord verifies val and unmarshals its payload into m.
func decodeProtoRecord(key, val []byte, m proto.Message) error {
	payload, err := decodeRecord(key, val)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(payload, m); err != nil {
		return fmt.Errorf("%w: %s: undecodable payload: %v", ErrCorrupt, describeKey(key), err)
	}
	return nil
}

// decodeEntryRecord decodes the log entry stored under key and checks that
// the entry's own index matches the key's, so a misplaced entry cannot be
// served. It never panics on arbitrary input (see FuzzDecodeEntryRecord).
func decodeEntryRecord(key, val []byte) (*pb.Entry, error) {
	idx, err := parseLogKey(key)
	if err != nil {
		return nil, err
	}
	e := new(pb.Entry)
	if err := decodeProtoRecord(key, val, e); err != nil {
		return nil, err
	}
	if e.GetIndex() != idx {
		return nil, fmt.Errorf("%w: %s: entry carries index %d", ErrCorrupt, describeKey(key), e.GetIndex())
	}
	return e, nil
}

// truncState is the log's dummy entry: the index and term of the last entry
// discarded by compaction or a snapshot. Term(trunc.index) must keep working
// after the entry itself is gone, for raft's log-matching check.
type truncState struct {
	index, term uint64
}

func encodeTrunc(t truncState) []byte {
	var p [16]byte
	binary.BigEndian.PutUint64(p[:8], t.index)
	binary.BigEndian.PutUint64(p[8:], t.term)
	return encodeRecord(keyTrunc, p[:])
}

func decodeTrunc(val []byte) (truncState, error) {
	p, err := decodeRecord(keyTrunc, val)
	if err != nil {
		return truncState{}, err
	}
	return decodeTruncPayload(p)
}

// decodeTruncPayload decodes an already verified truncated-state payload.
func decodeTruncPayload(p []byte) (truncState, error) {
	if len(p) != 16 {
		return truncState{}, fmt.Errorf("%w: %s: payload is %d bytes, want 16", ErrCorrupt, describeKey(keyTrunc), len(p))
	}
	return truncState{index: binary.BigEndian.Uint64(p[:8]), term: binary.BigEndian.Uint64(p[8:])}, nil
}

// checkEntryRecord verifies the log entry stored under key as
// decodeEntryRecord does (checksum, wire format, index matching the key)
// and returns its term, without decoding it into an Entry:
// opening a store verifies every entry, and most of a long log is never
// read again. It never panics on arbitrary input (see
// FuzzCheckEntryRecord).
func checkEntryRecord(key, val []byte) (term uint64, err error) {
	idx, err := parseLogKey(key)
	if err != nil {
		return 0, err
	}
	payload, err := decodeRecord(key, val)
	if err != nil {
		return 0, err
	}
	undecodable := func(what string) error {
		return fmt.Errorf("%w: %s: undecodable payload: %s", ErrCorrupt, describeKey(key), what)
	}
	var index uint64
	for b := payload; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, undecodable(protowire.ParseError(n).Error())
		}
		if num > protowire.MaxValidNumber { // ConsumeTag allows MessageSet's larger ones
			return 0, undecodable("invalid field number")
		}
		b = b[n:]
		switch {
		case (num == 2 || num == 3) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, undecodable(protowire.ParseError(n).Error())
			}
			if num == 2 {
				term = v
			} else {
				index = v
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return 0, undecodable(protowire.ParseError(n).Error())
			}
			b = b[n:]
		}
	}
	if index != idx {
		return 0, fmt.Errorf("%w: %s: entry carries index %d", ErrCorrupt, describeKey(key), index)
	}
	return term, nil
}
