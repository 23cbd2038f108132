package metadata

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// zsample builds a state with every kind of znode field set: null and
// empty data, an ephemeral, a container, a TTL node, a digest ACL and
// bumped versions.
func zsample(t testing.TB) *applier {
	a := newApplier(t)
	grantSessions(t, a, 2)
	require.NoError(t, zcreate(t, a, "/a", nil).Err)
	require.NoError(t, zcreate(t, a, "/a/null", func(c *ZNodeCreate) { c.Data = nil }).Err)
	require.NoError(t, zcreate(t, a, "/a/empty", func(c *ZNodeCreate) { c.Data = []byte{} }).Err)
	require.NoError(t, zcreate(t, a, "/a/eph", func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, 2 }).Err)
	require.NoError(t, zcreate(t, a, "/c", func(c *ZNodeCreate) { c.Container = true }).Err)
	require.NoError(t, zcreate(t, a, "/ttl", func(c *ZNodeCreate) { c.TTLMS = 5000 }).Err)
	require.NoError(t, zcreate(t, a, "/acl", func(c *ZNodeCreate) {
		c.ACL = []ZNodeACL{{Scheme: "digest", ID: "u:h", Perms: 31}, {Scheme: "world", ID: "anyone", Perms: 1}}
	}).Err)
	require.NoError(t, a.apply(zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/a", Data: []byte("x"), Version: -1, AtMS: 7})).Err)
	return a
}

// Every field survives the binary section, null data stays null, and the
// re-encoding is byte-identical.
func TestZNodeSectionRoundTrip(t *testing.T) {
	a := zsample(t)
	snap := mustSnapshot(t, a.s)
	r, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, snap, mustSnapshot(t, r))
	for _, p := range []string{"/", "/a", "/a/null", "/a/empty", "/a/eph", "/c", "/ttl", "/acl"} {
		x, _ := a.s.ZNode(p)
		y, ok := r.ZNode(p)
		require.True(t, ok, p)
		require.Equal(t, x, y, p)
	}
	n, _ := r.ZNode("/a/null")
	require.Nil(t, n.Data)
	n, _ = r.ZNode("/a/empty")
	require.NotNil(t, n.Data)
	require.Equal(t, []string{"/a/eph"}, r.EphemeralsOf(2))
	requireZConsistent(t, r)
}

// A snapshot written before the znode section (the tree inside the JSON
// ext section) restores to the same state, and is rewritten in the new
// layout; one with the tree in both places is refused.
func TestZNodeLegacyExtSection(t *testing.T) {
	a := zsample(t)
	legacy := a.s.ext.clone()
	legacy.LegacyZNodes, legacy.ZNodes = legacy.ZNodes.plain(), zmap{}
	old := encodeSnapshot(a.s.applied, a.s.revision, "", newTree(), legacy.encode(), nil)
	r, err := Restore(old)
	require.NoError(t, err)
	require.Equal(t, mustSnapshot(t, a.s), mustSnapshot(t, r))
	requireZConsistent(t, r)

	both := encodeSnapshot(a.s.applied, a.s.revision, "", newTree(), legacy.encode(), encodeZNodes(a.s.ext.ZNodes.plain()))
	_, err = Restore(both)
	require.ErrorIs(t, err, ErrCorruptSnapshot)
}

// Forged znode sections are refused with an error, never a panic or an
// allocation beyond the input.
func TestZNodeSectionRefusals(t *testing.T) {
	a := zsample(t)
	good := encodeZNodes(a.s.ext.ZNodes.plain())
	refused := map[string][]byte{
		"empty":        {0},
		"huge count":   {0xff, 0xff, 0xff, 0xff, 0x0f},
		"truncated":    good[:len(good)-1],
		"trailing":     append(bytes.Clone(good), 0),
		"unknown flag": func() []byte { b := bytes.Clone(good); b[1+1+1] = 0x80; return b }(), // count, len, "/", flags
	}
	for name, p := range refused {
		_, err := decodeZNodes(p)
		require.ErrorIs(t, err, ErrCorruptSnapshot, name)
	}
	// Out of order paths.
	nodes := map[string]*ZNode{"/": rootZNode(), "/b": {ACL: worldAll}}
	enc := encodeZNodes(nodes)
	swapped := bytes.Replace(enc, []byte{1, '/'}, []byte{2, '/', 'c'}, 1) // "/" becomes "/c" > "/b"
	_, err := decodeZNodes(swapped)
	require.ErrorIs(t, err, ErrCorruptSnapshot)
}

// A cut is the state at its index: applies after it change neither the
// cut nor its encoding, even while it is being encoded (run with -race).
func TestSnapshotCutIsolated(t *testing.T) {
	a := zsample(t)
	want := mustSnapshot(t, a.s)
	cut := a.s.Cut()
	require.Equal(t, a.s.applied, cut.Index())

	var wg sync.WaitGroup
	var got []byte
	wg.Go(func() { got = cut.Encode() })
	require.NoError(t, zcreate(t, a, "/later", nil).Err)
	require.NoError(t, a.apply(zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/a", Data: []byte("y"), Version: -1, AtMS: 9})).Err)
	require.NoError(t, a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/c", Version: -1})).Err)
	a.apply(putCmd("k", "v"))
	wg.Wait()
	require.Equal(t, want, got)
	require.NotEqual(t, want, mustSnapshot(t, a.s))
}

func FuzzZNodeSection(f *testing.F) {
	f.Add(encodeZNodes(zsample(f).s.ext.ZNodes.plain()))
	f.Add([]byte{1, 1, '/', 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		nodes, err := decodeZNodes(p)
		if err != nil {
			return
		}
		// Accepted input is canonical: it re-encodes to itself.
		if out := encodeZNodes(nodes); !bytes.Equal(out, p) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", p, out)
		}
	})
}

// zkLoad is the ZooKeeper benchmark's state: 10,000 sessions with an
// ephemeral each and 50,000 persistent nodes under 100 parents.
func zkLoad(b *testing.B) *State {
	a := newApplier(b)
	grantSessions(b, a, 10000)
	require.NoError(b, zcreate(b, a, "/s", nil).Err)
	for i := range 10000 {
		require.NoError(b, zcreate(b, a, fmt.Sprintf("/s/%d", i), func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, int64(i+1) }).Err)
	}
	for i := range 100 {
		require.NoError(b, zcreate(b, a, fmt.Sprintf("/p%d", i), nil).Err)
		for j := range 500 {
			require.NoError(b, zcreate(b, a, fmt.Sprintf("/p%d/n%d", i, j), func(c *ZNodeCreate) { c.Data = make([]byte, 64) }).Err)
		}
	}
	return a.s
}

// BenchmarkSnapshotCutZK is what a snapshot holds the state lock (and the
// raft loop) for with the ZooKeeper benchmark's tree.
func BenchmarkSnapshotCutZK(b *testing.B) {
	s := zkLoad(b)
	b.ReportAllocs()
	for b.Loop() {
		s.Cut().Release()
	}
}

// BenchmarkSnapshotEncodeZK is the rest of that snapshot, which runs off
// the raft loop.
func BenchmarkSnapshotEncodeZK(b *testing.B) {
	s := zkLoad(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Cut().Encode()
	}
}

// A snapshot streams its znode section record by record: the bytes are
// those of the reference encoder (encodeZNodes), and writing a 16 MB
// section allocates a small part of it, not a second copy of the tree.
func TestSnapshotStreamsTheZNodeSection(t *testing.T) {
	a := newApplier(t)
	data := bytes.Repeat([]byte("z"), 8<<10)
	for i := range 2000 {
		require.NoError(t, zcreate(t, a, fmt.Sprintf("/big%04d", i), func(c *ZNodeCreate) { c.Data = data }).Err)
	}
	c := a.s.Cut()
	var got bytes.Buffer
	n, err := c.WriteTo(&got)
	require.NoError(t, err)
	require.Equal(t, c.Len(), n)
	want := encodeSnapshot(c.applied, c.rev, c.cid, c.tree, c.ext, encodeZNodes(c.znodes))
	require.Equal(t, want, got.Bytes())

	section := len(encodeZNodes(c.znodes))
	require.Greater(t, section, 16_000_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = a.s.Cut().WriteTo(io.Discard)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(section/4),
		"writing the snapshot allocated %d bytes for a %d-byte znode section", after.TotalAlloc-before.TotalAlloc, section)
}

// BenchmarkSnapshotWriteToZK streams the snapshot as a controller does
// (into its file): the znode section is encoded record by record, so the
// bytes allocated per op stay far below the section's size.
func BenchmarkSnapshotWriteToZK(b *testing.B) {
	s := zkLoad(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Cut().WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// The sizing pass must match the encoding exactly, negative integers
// included, or encodeZNodes reallocates (or the length check below
// catches a miscount).
func TestZNodeRecordLen(t *testing.T) {
	nodes := zsample(t).s.ext.ZNodes.plain()
	nodes["/neg"] = &ZNode{ACL: []ZNodeACL{{Scheme: "x", ID: "y", Perms: -1}}, Czxid: -5, Version: -1, Cversion: 1 << 30}
	want := uvarintLen(uint64(len(nodes)))
	for p, n := range nodes {
		want += znodeRecordLen(p, n)
	}
	enc := encodeZNodes(nodes)
	require.Equal(t, want, len(enc))
	require.Equal(t, len(enc), cap(enc))
}
