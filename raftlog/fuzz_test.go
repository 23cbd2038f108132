package raftlog

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// FuzzDecodeEntryRecord feeds arbitrary keys and values to the log entry
// decoder: it must never panic, must report every failure as ErrCorrupt,
// and whatever it accepts must re-encode to an equivalent record.
func FuzzDecodeEntryRecord(f *testing.F) {
	for _, e := range []*pb.Entry{ent(1, 1, ""), ent(7, 3, "payload"), {Index: new(uint64(9))}} {
		val, err := encodeProtoRecord(logKey(e.GetIndex()), e)
		require.NoError(f, err)
		f.Add(logKey(e.GetIndex()), val)
		f.Add(logKey(e.GetIndex()+1), val)
	}
	f.Add([]byte("r/log/"), []byte{1, 0, 0, 0, 0})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, key, val []byte) {
		e, err := decodeEntryRecord(key, val)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		idx, err := parseLogKey(key)
		require.NoError(t, err)
		require.Equal(t, idx, e.GetIndex())
		again, err := encodeProtoRecord(key, e)
		require.NoError(t, err)
		e2, err := decodeEntryRecord(key, again)
		require.NoError(t, err)
		require.True(t, proto.Equal(e, e2))
	})
}

// FuzzCheckEntryRecord: checkEntryRecord, which Open runs on most of the
// log instead of decoding it, accepts exactly the records decodeEntryRecord
// accepts, with the same term. The payload is fuzzed inside a valid frame
// (a random frame would almost never pass the checksum).
func FuzzCheckEntryRecord(f *testing.F) {
	for _, e := range []*pb.Entry{ent(1, 1, ""), ent(7, 3, "payload"), {Index: new(uint64(9))}} {
		payload, err := proto.Marshal(e)
		require.NoError(f, err)
		f.Add(e.GetIndex(), payload)
		f.Add(e.GetIndex()+1, payload)
	}
	f.Add(uint64(3), []byte{0x18, 0x03, 0x22, 0x05, 'a'})        // data field cut short
	f.Add(uint64(3), []byte{0x18, 0x03, 0x12, 0x01, 'x'})        // term with the wrong wire type
	f.Add(uint64(3), []byte{0x18, 0x03, 0x0b})                   // a group that never ends
	f.Add(uint64(3), []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff}) // term cut short
	f.Fuzz(func(t *testing.T, idx uint64, payload []byte) {
		key := logKey(idx)
		val := encodeRecord(key, payload)
		term, err := checkEntryRecord(key, val)
		e, derr := decodeEntryRecord(key, val)
		if derr != nil {
			require.Error(t, err, "checked what does not decode (%v)", derr)
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.NoError(t, err, "refused what decodes")
		require.Equal(t, e.GetTerm(), term)
	})
}

// FuzzDecodeRecord checks the generic framing: no panics, ErrCorrupt on
// failure, and an accepted record is exactly what encodeRecord produces.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte("r/hs"), encodeRecord([]byte("r/hs"), []byte("abc")))
	f.Add([]byte("m/x"), encodeRecord([]byte("m/x"), nil))
	f.Add([]byte("r/trunc"), encodeTrunc(truncState{index: 5, term: 2}))
	f.Add([]byte("k"), []byte{2, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, key, val []byte) {
		p, err := decodeRecord(key, val)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.True(t, bytes.Equal(encodeRecord(key, p), val))
		if bytes.Equal(key, keyTrunc) {
			if _, err := decodeTrunc(val); err != nil {
				require.ErrorIs(t, err, ErrCorrupt)
			}
		}
	})
}

// FuzzDecodeSnapFile feeds arbitrary bytes to the snapshot file decoder: it
// must never panic, must report every failure as ErrCorrupt, and whatever it
// accepts must be exactly what encodeSnapFile produces for its fields.
func FuzzDecodeSnapFile(f *testing.F) {
	for _, c := range []struct {
		index, term uint64
		data        string
	}{{1, 1, ""}, {3, 2, "state machine"}, {1 << 40, 7, "x"}} {
		header, trailer, _ := encodeSnapFile(c.index, c.term, []byte(c.data))
		f.Add(append(append(header, c.data...), trailer...))
	}
	f.Add([]byte{})
	f.Add(snapMagic[:])
	f.Fuzz(func(t *testing.T, buf []byte) {
		ref, data, err := decodeSnapFile(buf)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		header, trailer, crc := encodeSnapFile(ref.index, ref.term, data)
		require.Equal(t, crc, ref.crc)
		require.Equal(t, uint64(len(data)), ref.length)
		require.True(t, bytes.Equal(append(append(header, data...), trailer...), buf))
		require.Equal(t, snapFileName(ref.index, ref.term), ref.name)
	})
}

// FuzzDecodeSnapRef checks the record naming a snapshot file: no panics,
// ErrCorrupt on failure, and only names of the expected form accepted (the
// name is joined to a directory path).
func FuzzDecodeSnapRef(f *testing.F) {
	f.Add(encodeSnapRef(&snapRef{index: 3, term: 2, length: 13, crc: 0xdeadbeef, name: snapFileName(3, 2)}))
	f.Add(encodeSnapRef(&snapRef{index: 3, term: 2, name: "../../etc/passwd"}))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, val []byte) {
		p, err := decodeRecord(keySnapFile, val)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		ref, err := decodeSnapRefPayload(p)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.Equal(t, snapFileName(ref.index, ref.term), ref.name)
		require.True(t, bytes.Equal(encodeSnapRef(ref), val))
	})
}
