package metadata

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleCommands() []*Command {
	return []*Command{
		{ID: 1, Op: OpPut, Key: "a", Value: []byte("v")},
		{ID: math.MaxUint64, Op: OpPut, Key: "k/ü", Value: bytes.Repeat([]byte{0}, 300)},
		{Op: OpPut, Key: "x"},
		{ID: 5, Op: OpPut, Key: "c", Value: []byte("v"), HasPrev: true},
		{ID: 6, Op: OpPut, Key: "c", HasPrev: true, PrevRevision: math.MaxInt64},
		{ID: 7, Op: OpDelete, Key: "c", HasPrev: true, PrevRevision: -3},
		{ID: 8, Op: OpDelete, Key: "d"},
		{ID: 9, Op: OpSetClusterID, Key: "cluster-1"},
		{ID: 10, Op: OpPut | IgnoreUnknownTypeFlag, Key: "e", Value: []byte("v")},
		{Op: OpPut},
		{ID: 11, Term: 1, Op: OpPut, Key: "t", Value: []byte("v")},
		{ID: 12, Term: math.MaxUint64, Op: OpDelete, Key: "t", HasPrev: true, PrevRevision: 4},
	}
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range sampleCommands() {
		b := c.Marshal()
		if c.Term == 0 {
			require.Equal(t, byte(CommandFormatV1), b[0], "a command without a term keeps format 1")
		} else {
			require.Equal(t, byte(CommandFormatV2), b[0])
		}
		got, err := UnmarshalCommand(b)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c, got)
		require.Equal(t, b, got.Marshal(), "encoding is canonical")
		// Every strict prefix and any trailing byte is rejected.
		for i := range len(b) {
			_, err := UnmarshalCommand(b[:i])
			require.Error(t, err, "prefix %d of %x", i, b)
		}
		_, err = UnmarshalCommand(append(b, 0))
		require.ErrorIs(t, err, ErrMalformed)
	}
}

func TestCommandLayout(t *testing.T) {
	// Pin the v1 layout documented in docs/ENCODING.md.
	c := &Command{ID: 300, Op: OpPut, Key: "ab", Value: []byte("xyz"), HasPrev: true, PrevRevision: -1}
	want := []byte{
		1,          // format version
		1,          // op put
		0xac, 0x02, // id 300
		9,           // payload length
		1,           // flags: has prev
		2, 'a', 'b', // key
		3, 'x', 'y', 'z', // value
		1, // prev revision -1 (zig-zag)
	}
	require.Equal(t, want, c.Marshal())

	// Format 2 adds the proposer's term after the id.
	c.Term = 7
	want = append([]byte{2, 1, 0xac, 0x02, 7}, want[4:]...)
	require.Equal(t, want, c.Marshal())
}

func TestUnmarshalCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"version 0", []byte{0, 1, 0, 0}, ErrUnsupportedVersion},
		{"version 3", []byte{3, 1, 0, 0}, ErrUnsupportedVersion},
		{"format 2 without term", []byte{2, 1, 0}, ErrMalformed},
		{"format 2 with term 0", []byte{2, 1, 0, 0, 4, 0, 1, 'k', 0}, ErrMalformed},
		{"missing op", []byte{1}, ErrMalformed},
		{"missing id", []byte{1, 1}, ErrMalformed},
		{"varint overflow", []byte{1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}, ErrMalformed},
		{"non-minimal id", []byte{1, 1, 0x80, 0x00, 4, 0, 1, 'k', 0}, ErrMalformed},
		{"payload too long", []byte{1, 1, 0, 50, 0}, ErrMalformed},
		{"huge payload length", []byte{1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrMalformed},
		{"empty payload", []byte{1, 1, 0, 0}, ErrMalformed},
		{"reserved flag", []byte{1, 1, 0, 4, 2, 1, 'k', 0}, ErrMalformed},
		{"key too long", []byte{1, 1, 0, 4, 0, 9, 'k', 0}, ErrMalformed},
		{"trailing payload", []byte{1, 1, 0, 5, 0, 1, 'k', 0, 0}, ErrMalformed},
		{"missing prev", []byte{1, 1, 0, 4, 1, 1, 'k', 0}, ErrMalformed},
		{"unknown op", []byte{1, 99, 0, 0}, ErrUnknownOp},
		{"op zero", []byte{1, 0, 0, 0}, ErrUnknownOp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := UnmarshalCommand(tc.in)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, c)
		})
	}
}

func TestUnknownIgnorableOpRoundTrip(t *testing.T) {
	in := []byte{1, 99 | byte(IgnoreUnknownTypeFlag), 42, 3, 'a', 'b', 'c'}
	c, err := UnmarshalCommand(in)
	require.NoError(t, err)
	require.Equal(t, uint64(42), c.ID)
	require.True(t, c.Op.Ignorable())
	require.Equal(t, Op(99), c.Op.Base())
	require.Equal(t, "op(99)|ignorable", c.Op.String())
	require.Equal(t, in, c.Marshal())
	in[4] = 'X'
	require.Equal(t, []byte("abc"), c.payload, "decoded command must not alias its input")
}

func TestUnmarshalDoesNotAlias(t *testing.T) {
	b := (&Command{Op: OpPut, Key: "key", Value: []byte("value")}).Marshal()
	c, err := UnmarshalCommand(b)
	require.NoError(t, err)
	for i := range b {
		b[i] = 0
	}
	require.Equal(t, "key", c.Key)
	require.Equal(t, "value", string(c.Value))
}

func FuzzUnmarshalCommand(f *testing.F) {
	for _, c := range sampleCommands() {
		f.Add(c.Marshal())
	}
	f.Add([]byte{1, 0xe3, 1, 2, 3, 4})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := UnmarshalCommand(b)
		if err != nil {
			if c != nil {
				t.Fatalf("non-nil command with error %v", err)
			}
			return
		}
		// Accepted input is canonical: re-encoding reproduces it exactly.
		if out := c.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, out)
		}
		// And Apply on it never panics, with or without a term check.
		s := New()
		_, _ = s.Apply(1, b)
		_, _ = s.ApplyEntry(2, 3, b)
	})
}

// CheckApplicable refuses everything that would stop Apply: whenever Apply
// on b stops with ErrUnknownOp or ErrUnsupportedVersion, CheckApplicable
// refused b first. (It may refuse more: a malformed envelope is dropped
// too, which costs nothing.)
func FuzzCheckApplicable(f *testing.F) {
	for _, c := range sampleCommands() {
		f.Add(c.Marshal())
	}
	f.Add([]byte{1, 0x63, 0, 0})
	f.Add([]byte{2, 1, 1, 0})
	f.Add([]byte{3, 1, 1, 0})
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkErr := CheckApplicable(b)
		_, res := New().Apply(1, b)
		halts := errors.Is(res.Err, ErrUnknownOp) || errors.Is(res.Err, ErrUnsupportedVersion)
		if halts && checkErr == nil {
			t.Fatalf("Apply halts on %x (%v) but CheckApplicable accepted it", b, res.Err)
		}
	})
}

// Every command this binary writes passes the check.
func TestCheckApplicableAcceptsEveryKnownCommand(t *testing.T) {
	for _, c := range sampleCommands() {
		require.NoError(t, CheckApplicable(c.Marshal()), c.Op.String())
	}
	require.ErrorIs(t, CheckApplicable([]byte{CommandFormatV2 + 1, byte(OpPut)}), ErrUnsupportedVersion)
	require.ErrorIs(t, CheckApplicable([]byte{CommandFormatV1, 0x63, 0, 0}), ErrUnknownOp)
	require.ErrorIs(t, CheckApplicable(nil), ErrMalformed)
}
