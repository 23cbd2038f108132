package jute

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrimitivesLayout(t *testing.T) {
	e := NewEncoder(nil)
	e.Int32(-1)
	e.Int64(0x0102030405060708)
	e.Bool(true)
	e.Bool(false)
	e.Buffer(nil)
	e.Buffer([]byte{})
	e.Buffer([]byte("ab"))
	e.UString("zk")
	e.UStrings(nil)
	e.UStrings([]string{"x"})
	want := []byte{
		0xff, 0xff, 0xff, 0xff,
		1, 2, 3, 4, 5, 6, 7, 8,
		1, 0,
		0xff, 0xff, 0xff, 0xff, // null buffer
		0, 0, 0, 0, // empty buffer
		0, 0, 0, 2, 'a', 'b',
		0, 0, 0, 2, 'z', 'k',
		0xff, 0xff, 0xff, 0xff, // null vector
		0, 0, 0, 1, 0, 0, 0, 1, 'x',
	}
	require.Equal(t, want, e.Bytes())

	d := NewDecoder(want)
	require.Equal(t, int32(-1), d.Int32())
	require.Equal(t, int64(0x0102030405060708), d.Int64())
	require.True(t, d.Bool())
	require.False(t, d.Bool())
	require.Nil(t, d.Buffer())
	b := d.Buffer()
	require.NotNil(t, b)
	require.Empty(t, b)
	require.Equal(t, []byte("ab"), d.Buffer())
	require.Equal(t, "zk", d.UString())
	require.Nil(t, d.UStrings())
	require.Equal(t, []string{"x"}, d.UStrings())
	require.NoError(t, d.Err())
	require.Zero(t, d.Remaining())
}

func TestBoolNonZeroIsTrue(t *testing.T) {
	// Java's readBoolean reads any non-zero byte as true.
	require.True(t, NewDecoder([]byte{7}).Bool())
}

func TestBufferIsCapped(t *testing.T) {
	d := NewDecoder([]byte{0, 0, 0, 1, 'a', 0, 0, 0, 9})
	b := d.Buffer()
	b = append(b, 'X') // must not overwrite the next field
	_ = b
	require.Equal(t, int32(9), d.Int32())
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		read func(*Decoder)
		want error
	}{
		{"short int", []byte{0, 0, 1}, func(d *Decoder) { d.Int32() }, ErrTruncated},
		{"short long", []byte{0, 0, 0, 0, 1}, func(d *Decoder) { d.Int64() }, ErrTruncated},
		{"empty bool", nil, func(d *Decoder) { d.Bool() }, ErrTruncated},
		{"negative buffer", []byte{0xff, 0xff, 0xff, 0xfe}, func(d *Decoder) { d.Buffer() }, ErrBadLength},
		{"buffer past end", []byte{0, 0, 0, 5, 'a'}, func(d *Decoder) { d.Buffer() }, ErrBadLength},
		{"huge string", []byte{0x7f, 0xff, 0xff, 0xff}, func(d *Decoder) { _ = d.UString() }, ErrBadLength},
		{"min int string", []byte{0x80, 0, 0, 0}, func(d *Decoder) { _ = d.UString() }, ErrBadLength},
		{"vector count past end", []byte{0, 0, 0, 2, 0, 0, 0, 0}, func(d *Decoder) { d.UStrings() }, ErrBadLength},
		{"vector element truncated", []byte{0, 0, 0, 1, 0, 0, 0, 3, 'a'}, func(d *Decoder) { d.UStrings() }, ErrBadLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.in)
			tc.read(d)
			require.ErrorIs(t, d.Err(), tc.want)
		})
	}
}

func TestDecoderErrorIsSticky(t *testing.T) {
	d := NewDecoder([]byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	d.Int64()
	d.Int32() // would succeed on its own, but the input is already bad
	require.ErrorIs(t, d.Err(), ErrTruncated)
	require.Zero(t, d.Int32())
	require.Nil(t, d.Buffer())
}

// A count of 2^31-1 ACLs in 16 bytes must fail before allocating.
func TestHugeCountDoesNotAllocate(t *testing.T) {
	in := Encode(nil, &PathRequest{Path: "/a"})
	in = append(in, 0x7f, 0xff, 0xff, 0xff) // acl vector count
	in = append(in, 0, 0, 0, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var r SetACLRequest
	err := Decode(in, &r)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrBadLength)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
}

func TestEncodeDecodeHelpers(t *testing.T) {
	s := sampleStat
	b := Encode([]byte("prefix"), &s)
	require.True(t, bytes.HasPrefix(b, []byte("prefix")))
	require.Len(t, b, len("prefix")+statLen)
	var got Stat
	require.NoError(t, Decode(b[len("prefix"):], &got))
	require.Equal(t, s, got)
	require.ErrorIs(t, Decode(b[len("prefix"):len(b)-1], &got), ErrTruncated)
}

func TestCodeNames(t *testing.T) {
	require.Equal(t, "NoNode", CodeNoNode.String())
	require.Equal(t, "zookeeper: NodeExists", CodeNodeExists.Error())
	require.Equal(t, "Code(-999)", Code(-999).String())
	var err error = CodeBadVersion
	var c Code
	require.True(t, errors.As(err, &c))
	require.Equal(t, CodeBadVersion, c)
	require.Equal(t, "getChildren2", OpGetChildren2.String())
	require.Equal(t, "op(999)", Op(999).String())
	require.Equal(t, int32(math.MinInt32), int32(Code(math.MinInt32)))
}
