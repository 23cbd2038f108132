package metadata

import (
	"encoding/binary"
	"fmt"
)

// OpZNodeWrite is a create, delete or setData in binary (docs/ENCODING.md,
// "Znode writes in binary"). They are the ZooKeeper port's hot path, and
// every controller decodes every one on its raft loop: as JSON (with the
// data in base64) the decoding was 5-7% of a controller's CPU in the
// 128-client benchmark. The JSON ops 80-82 stay readable, for the entries
// already in logs, and multi keeps JSON.
const OpZNodeWrite Op = 86

// Kinds of an OpZNodeWrite payload (its first byte).
const (
	zwCreate  = 1
	zwDelete  = 2
	zwSetData = 3
)

// Flag bits of a create's and a setData's flags byte.
const (
	zwNilData    = 1 << 0 // Data is nil (null), not empty
	zwEphemeral  = 1 << 1
	zwSequential = 1 << 2
	zwContainer  = 1 << 3
	zwCreateMask = zwNilData | zwEphemeral | zwSequential | zwContainer
)

// NewZNodeWriteCommand encodes p, a *ZNodeCreate, *ZNodeDelete or
// *ZNodeSetData, as an OpZNodeWrite command.
func NewZNodeWriteCommand(p any) (*Command, error) {
	n, err := zwLen(p)
	if err != nil {
		return nil, err
	}
	return &Command{Op: OpZNodeWrite, Value: appendZNodeWrite(make([]byte, 0, n), p)}, nil
}

// zwLen bounds the encoded size of p, so that one allocation holds it
// (and, for NewZNodeFromWriteCommand, its origin too).
func zwLen(p any) (int, error) {
	switch p := p.(type) {
	case *ZNodeCreate:
		return 32 + len(p.Path) + len(p.Data) + 16*len(p.ACL), nil
	case *ZNodeDelete:
		return 8 + len(p.Path), nil
	case *ZNodeSetData:
		return 24 + len(p.Path) + len(p.Data), nil
	}
	return 0, fmt.Errorf("encode %s payload: unsupported %T", OpZNodeWrite, p)
}

// appendZNodeWrite appends p's OpZNodeWrite payload; p is one zwLen
// accepted.
func appendZNodeWrite(b []byte, p any) []byte {
	switch p := p.(type) {
	case *ZNodeCreate:
		b = append(b, zwCreate, dataFlag(p.Data)|bit(p.Ephemeral, zwEphemeral)|bit(p.Sequential, zwSequential)|bit(p.Container, zwContainer))
		b = appendLenString(b, p.Path)
		b = appendLenBytes(b, p.Data)
		b = appendZNodeACL(b, p.ACL)
		b = binary.AppendVarint(b, p.TTLMS)
		b = binary.AppendVarint(b, p.Session)
		b = binary.AppendVarint(b, p.AtMS)
	case *ZNodeDelete:
		b = append(b, zwDelete)
		b = appendLenString(b, p.Path)
		b = binary.AppendVarint(b, int64(p.Version))
	case *ZNodeSetData:
		b = append(b, zwSetData, dataFlag(p.Data))
		b = appendLenString(b, p.Path)
		b = appendLenBytes(b, p.Data)
		b = binary.AppendVarint(b, int64(p.Version))
		b = binary.AppendVarint(b, p.AtMS)
	}
	return b
}

func dataFlag(d []byte) byte { return bit(d == nil, zwNilData) }

func bit(on bool, b byte) byte {
	if on {
		return b
	}
	return 0
}

// decodeZNodeWrite decodes an OpZNodeWrite payload into a *ZNodeCreate,
// *ZNodeDelete or *ZNodeSetData. Like every decoder here it returns an
// error, never panics, and accepts one encoding per value: unknown kinds or
// flags, null data with bytes, and trailing bytes are refused.
func decodeZNodeWrite(p []byte) (any, error) {
	r := reader{b: p}
	kind, err := r.byte()
	if err != nil {
		return nil, fmt.Errorf("znode write kind: %w", err)
	}
	var out any
	switch kind {
	case zwCreate:
		out, err = readZWCreate(&r)
	case zwDelete:
		d := &ZNodeDelete{}
		if d.Path, err = readString(&r); err == nil {
			d.Version, err = readInt32(&r)
		}
		out = d
	case zwSetData:
		out, err = readZWSetData(&r)
	default:
		return nil, fmt.Errorf("znode write: unknown kind %d", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("znode write: %w", err)
	}
	if r.remaining() != 0 {
		return nil, fmt.Errorf("znode write: %d trailing bytes", r.remaining())
	}
	return out, nil
}

func readZWCreate(r *reader) (*ZNodeCreate, error) {
	flags, path, data, err := readZWHead(r, zwCreateMask, "create")
	if err != nil {
		return nil, err
	}
	c := &ZNodeCreate{Path: path, Data: data,
		Ephemeral: flags&zwEphemeral != 0, Sequential: flags&zwSequential != 0, Container: flags&zwContainer != 0}
	if c.ACL, err = readZNodeACL(r, 0); err != nil {
		return nil, err
	}
	for _, f := range []*int64{&c.TTLMS, &c.Session, &c.AtMS} {
		if *f, err = r.varint(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func readZWSetData(r *reader) (*ZNodeSetData, error) {
	_, path, data, err := readZWHead(r, zwNilData, "setData")
	if err != nil {
		return nil, err
	}
	d := &ZNodeSetData{Path: path, Data: data}
	if d.Version, err = readInt32(r); err != nil {
		return nil, err
	}
	if d.AtMS, err = r.varint(); err != nil {
		return nil, err
	}
	return d, nil
}

// readZWHead reads what create and setData both start with: the flags
// (only those in mask allowed), the path and the data.
func readZWHead(r *reader, mask byte, what string) (flags byte, path string, data []byte, err error) {
	if flags, err = r.byte(); err != nil {
		return 0, "", nil, err
	}
	if flags&^mask != 0 {
		return 0, "", nil, fmt.Errorf("unknown %s flags %#x", what, flags)
	}
	if path, err = readString(r); err != nil {
		return 0, "", nil, fmt.Errorf("path: %w", err)
	}
	if data, err = readData(r, flags); err != nil {
		return 0, "", nil, err
	}
	return flags, path, data, nil
}

func readString(r *reader) (string, error) {
	b, err := r.lenBytes()
	return string(b), err
}

// readData reads a data field: null when the flag says so (and then it
// must be empty), else a copy.
func readData(r *reader, flags byte) ([]byte, error) {
	b, err := r.lenBytes()
	switch {
	case err != nil:
		return nil, fmt.Errorf("data: %w", err)
	case flags&zwNilData != 0 && len(b) > 0:
		return nil, fmt.Errorf("null data with %d bytes", len(b))
	case flags&zwNilData != 0:
		return nil, nil
	}
	return append([]byte{}, b...), nil
}

func readInt32(r *reader) (int32, error) {
	v, err := r.varint()
	if err != nil {
		return 0, err
	}
	if int64(int32(v)) != v {
		return 0, fmt.Errorf("%d out of int32 range", v)
	}
	return int32(v), nil
}

// applyZNodeWrite applies a binary create, delete or setData exactly as
// its JSON op would.
func (s *State) applyZNodeWrite(c *Command) Result {
	p, err := decodeZNodeWrite(c.Value)
	if err != nil {
		return s.invalid("%v", err)
	}
	switch p := p.(type) {
	case *ZNodeCreate:
		r, err := s.zcreate(p, nil)
		return s.zresult(r, err, ZNodeCreated)
	case *ZNodeDelete:
		r, err := s.zdelete(p, nil)
		r.Path = p.Path
		return s.zresult(r, err, ZNodeDeleted)
	default:
		r, err := s.zsetData(p.(*ZNodeSetData), nil)
		return s.zresult(r, err, ZNodeDataChanged)
	}
}
