package metadata

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// NewZNodeFromWriteCommand encodes exactly what wrapping the write
// command does, and refuses what either refuses.
func TestNewZNodeFromWriteCommandIsTheWrappedWrite(t *testing.T) {
	o := ZNodeOrigin{Session: -7, Conn: 300}
	for _, p := range []any{
		&ZNodeCreate{Path: "/a/b", Data: []byte("data"), ACL: worldAll, Ephemeral: true, Sequential: true, Session: -7, AtMS: 99},
		&ZNodeCreate{Path: "/ttl", ACL: []ZNodeACL{{Scheme: "digest", ID: "u:x", Perms: 1}}, TTLMS: 5000},
		&ZNodeDelete{Path: "/a", Version: 3},
		&ZNodeSetData{Path: "/a", Data: bytes.Repeat([]byte("v"), 300), Version: -1, AtMS: 5},
		&ZNodeSetData{Path: "/nil"},
	} {
		got, err := NewZNodeFromWriteCommand(o, p)
		require.NoError(t, err)
		want := from(t, o, zwrite(t, p))
		require.Equal(t, want.Marshal(), got.Marshal(), "%+v", p)
	}
	_, err := NewZNodeFromWriteCommand(o, &ZNodeMulti{})
	require.ErrorContains(t, err, "unsupported")
	_, err = NewZNodeFromWriteCommand(ZNodeOrigin{Session: 1}, &ZNodeDelete{Path: "/a"})
	require.ErrorContains(t, err, "conn must not be 0")
}

// Apply decodes a znode write without copying its value, so the state
// must copy whatever it keeps: scribbling over an entry after it applied
// changes no znode. A put's value is kept as decoded, so it is copied.
func TestApplyKeepsNothingOfAZNodeWriteEntry(t *testing.T) {
	a := newApplier(t)
	h := strings.Repeat("ab", 32)
	require.NoError(t, a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: h})).Err)
	o := ZNodeOrigin{Session: 1, Conn: 11}
	digest := []ZNodeACL{{Scheme: "digest", ID: "user:hash", Perms: 31}}
	apply := func(c *Command) {
		t.Helper()
		a.index++
		c.ID = a.index
		entry := c.Marshal()
		_, res := a.s.Apply(a.index, entry)
		require.NoError(t, res.Err)
		for i := range entry {
			entry[i] = 0xff
		}
	}
	apply(from(t, o, zwrite(t, &ZNodeCreate{Path: "/n", Data: []byte("created"), ACL: digest})))
	apply(from(t, o, zwrite(t, &ZNodeCreate{Path: "/n/e", Data: []byte("eph"), ACL: worldAll, Ephemeral: true, Session: 1})))
	apply(from(t, o, zwrite(t, &ZNodeSetData{Path: "/n", Data: []byte("set"), Version: -1})))
	n := mustZ(t, a, "/n")
	require.Equal(t, "set", string(n.Data))
	require.Equal(t, digest, n.ACL)
	require.Equal(t, "eph", string(mustZ(t, a, "/n/e").Data))
	require.Equal(t, []string{"/n/e"}, a.s.EphemeralsOf(1))
	names, _ := a.s.Children("/n")
	require.Equal(t, []string{"e"}, names)

	c := &Command{Op: OpZNodeFrom, Value: []byte("payload")}
	b := c.Marshal()
	got, _, err := decodeCommand(b, true)
	require.NoError(t, err)
	require.True(t, &got.Value[0] == &b[len(b)-len("payload")], "apply's decode aliases a znode write")
	b = putCmd("k", "value").Marshal()
	got, _, err = decodeCommand(b, true)
	require.NoError(t, err)
	require.False(t, &got.Value[0] == &b[len(b)-len("value")], "apply's decode copies a put's value")
}

// A ZooKeeper write's command is one buffer and the Command, and applying
// a setData allocates no more than the 7 objects it needs (the Command, the
// path, the data's copy, the payload, the new node, the result's event and
// its boxing): a second buffer when encoding, or apply copying the value
// again, both gone in "Less garbage per write, again"
// (docs/PERFORMANCE.md), would each add one.
func TestZNodeWriteAllocations(t *testing.T) {
	o := ZNodeOrigin{Session: 1, Conn: 11}
	set := &ZNodeSetData{Path: "/n", Data: bytes.Repeat([]byte("v"), 256), Version: -1}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := NewZNodeFromWriteCommand(o, set); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("encoding a setData's command: %v allocations, want 2", n)
	}

	a := newApplier(t)
	require.NoError(t, a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: strings.Repeat("ab", 32)})).Err)
	require.NoError(t, zcreate(t, a, "/n", nil).Err)
	c, err := NewZNodeFromWriteCommand(o, set)
	require.NoError(t, err)
	entry := c.Marshal()
	if n := testing.AllocsPerRun(100, func() {
		a.index++
		if _, res := a.s.Apply(a.index, entry); res.Err != nil {
			t.Fatal(res.Err)
		}
	}); n > 7 {
		t.Errorf("applying a setData: %v allocations, want at most 7", n)
	}
}

// BenchmarkApplyZNodeSetData applies ZooKeeper setData commands as every
// controller does for every such write; its bytes/op is the state
// machine's share of a write's garbage (docs/PERFORMANCE.md, "Less
// garbage per write, again").
func BenchmarkApplyZNodeSetData(b *testing.B) {
	a := newApplier(b)
	require.NoError(b, a.apply(zcmd(b, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: strings.Repeat("ab", 32)})).Err)
	require.NoError(b, zcreate(b, a, "/bench", nil).Err)
	o := ZNodeOrigin{Session: 1, Conn: 11}
	entries := make([][]byte, 64)
	for i := range entries {
		c, err := NewZNodeFromWriteCommand(o, &ZNodeSetData{Path: "/bench", Data: bytes.Repeat([]byte{byte(i)}, 256), Version: -1})
		require.NoError(b, err)
		c.ID = uint64(i + 1)
		entries[i] = c.Marshal()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a.index++
		if _, res := a.s.Apply(a.index, entries[i%len(entries)]); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}
