package metadata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// binaryOf is cmd with a JSON create, delete or setData turned into its
// OpZNodeWrite twin; other commands are returned as they are.
func binaryOf(t testing.TB, cmd *Command) *Command {
	var p any
	switch cmd.Op {
	case OpZNodeCreate:
		p = &ZNodeCreate{}
	case OpZNodeDelete:
		p = &ZNodeDelete{}
	case OpZNodeSetData:
		p = &ZNodeSetData{}
	default:
		return cmd
	}
	require.NoError(t, json.Unmarshal(cmd.Value, p))
	b, err := NewZNodeWriteCommand(p)
	require.NoError(t, err)
	return b
}

// The binary ops apply exactly as the JSON ones: same results, same
// events, byte-identical state, over random logs.
func TestZNodeWriteMatchesJSON(t *testing.T) {
	for seed := range uint64(5) {
		a, b := newApplier(t), newApplier(t)
		grantSessions(t, a, 3)
		grantSessions(t, b, 3)
		binary := 0
		for _, cmd := range randomZLog(t, seed, 600) {
			bc := binaryOf(t, cmd)
			if bc.Op == OpZNodeWrite {
				binary++
			}
			ra, rb := a.apply(cmd), b.apply(bc)
			require.Equal(t, fmt.Sprint(ra), fmt.Sprint(rb), "%s", cmd.Value)
		}
		require.Greater(t, binary, 200)
		require.Equal(t, mustSnapshot(t, a.s), mustSnapshot(t, b.s))
		requireZConsistent(t, b.s)
	}
}

// Every field survives, null data stays null and empty stays empty.
func TestZNodeWriteRoundTrip(t *testing.T) {
	for _, p := range []any{
		&ZNodeCreate{Path: "/a/b", Data: nil, ACL: []ZNodeACL{{Scheme: "digest", ID: "u:h", Perms: 31}, {Scheme: "world", ID: "anyone", Perms: 1}},
			Ephemeral: true, Sequential: true, Session: -7, AtMS: 1 << 41},
		&ZNodeCreate{Path: "/c", Data: []byte{}, Container: true, TTLMS: 5000, AtMS: 1},
		&ZNodeCreate{Path: "/d", Data: []byte("x")},
		&ZNodeDelete{Path: "/a", Version: -1},
		&ZNodeSetData{Path: "/a", Data: nil, Version: 1<<31 - 1, AtMS: 3},
		&ZNodeSetData{Path: "/a", Data: []byte{}, Version: -1},
	} {
		c, err := NewZNodeWriteCommand(p)
		require.NoError(t, err)
		require.Equal(t, OpZNodeWrite, c.Op)
		got, err := decodeZNodeWrite(c.Value)
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	_, err := NewZNodeWriteCommand(&ZNodeMulti{})
	require.Error(t, err)
}

// Malformed payloads are refused by the state machine (as any bad
// command), which stays unchanged.
func TestZNodeWriteRefusals(t *testing.T) {
	good, err := NewZNodeWriteCommand(&ZNodeSetData{Path: "/a", Data: []byte("v"), Version: -1})
	require.NoError(t, err)
	v := good.Value // kind, flags, len, "/a", len, "v", version, at
	for name, p := range map[string][]byte{
		"empty":            {},
		"unknown kind":     {9},
		"unknown flags":    append([]byte{zwSetData, 0x80}, v[2:]...),
		"null with bytes":  append([]byte{zwSetData, zwNilData}, v[2:]...),
		"trailing":         append(bytes.Clone(v), 0),
		"truncated":        v[:len(v)-1],
		"version overflow": {zwDelete, 2, '/', 'a', 0x80, 0x80, 0x80, 0x80, 0x20},
		"acl count":        {zwCreate, 0, 2, '/', 'a', 0, 65},
	} {
		a := newApplier(t)
		require.NoError(t, zcreate(t, a, "/a", nil).Err)
		before, rev := mustZ(t, a, "/a"), a.s.Revision()
		_, err := decodeZNodeWrite(p)
		require.Error(t, err, name)
		res := a.apply(&Command{Op: OpZNodeWrite, Value: p})
		require.Error(t, res.Err, name)
		require.Equal(t, before, mustZ(t, a, "/a"), name)
		require.Equal(t, rev, a.s.Revision(), name)
	}
}

func FuzzZNodeWrite(f *testing.F) {
	for _, p := range []any{
		&ZNodeCreate{Path: "/a", Data: []byte("d"), ACL: worldAll, Sequential: true, AtMS: 5},
		&ZNodeDelete{Path: "/a", Version: 3},
		&ZNodeSetData{Path: "/a", Data: nil, Version: -1},
	} {
		c, err := NewZNodeWriteCommand(p)
		require.NoError(f, err)
		f.Add(c.Value)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		v, err := decodeZNodeWrite(p)
		if err != nil {
			return
		}
		// One encoding per value: what decodes re-encodes to itself.
		c, err := NewZNodeWriteCommand(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.Value, p) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", p, c.Value)
		}
		// And applying it never panics.
		s := New()
		_, _ = s.Apply(1, (&Command{Op: OpZNodeWrite, Value: p}).Marshal())
	})
}

// A stored znode's data is its own: the entry it was applied from may be
// reused or changed afterwards (the raft log's buffers are), for the
// binary and JSON writes alike, wrapped with their origin or not.
func TestZNodeDataOwnsItsBytes(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 1)
	apply := func(c *Command) {
		t.Helper()
		a.index++
		c.ID = a.index * 10
		entry := c.Marshal()
		_, res := a.s.Apply(a.index, entry)
		require.NoError(t, res.Err)
		for i := range entry {
			entry[i] = 0xff
		}
	}
	create := ZNodeCreate{Path: "/b", Data: []byte("created"), ACL: worldAll}
	bc, err := NewZNodeWriteCommand(&create)
	require.NoError(t, err)
	apply(bc)
	require.Equal(t, []byte("created"), mustZ(t, a, "/b").Data)

	apply(zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/j", Data: []byte("json"), ACL: worldAll}))
	require.Equal(t, []byte("json"), mustZ(t, a, "/j").Data)

	set, err := NewZNodeWriteCommand(&ZNodeSetData{Path: "/b", Data: []byte("changed"), Version: -1})
	require.NoError(t, err)
	from, err := NewZNodeFromCommand(ZNodeOrigin{Session: 1, Conn: 7}, set)
	require.NoError(t, err)
	apply(from)
	require.Equal(t, []byte("changed"), mustZ(t, a, "/b").Data)
	require.Equal(t, []byte("changed"), a.s.ext.znode("/b").Data)
}
