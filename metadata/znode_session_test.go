package metadata

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// from wraps a binary znode write, a setACL or a multi with its origin.
func from(t testing.TB, o ZNodeOrigin, inner *Command) *Command {
	t.Helper()
	c, err := NewZNodeFromCommand(o, inner)
	require.NoError(t, err)
	return c
}

func zwrite(t testing.TB, p any) *Command {
	t.Helper()
	c, err := NewZNodeWriteCommand(p)
	require.NoError(t, err)
	return c
}

// A write from the connection a session left is refused once the session
// was bound elsewhere, at the log position of the bind: before it, it
// applies; after it, SessionMoved, and nothing changes. The new owner's
// writes apply, and so do writes with no origin (the server's own, and
// entries from before origins).
func TestZNodeSessionMoved(t *testing.T) {
	a := newApplier(t)
	h := strings.Repeat("ab", 32)
	require.NoError(t, a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: h})).Err)
	require.NoError(t, zcreate(t, a, "/n", nil).Err)
	oldConn, newConn := ZNodeOrigin{Session: 1, Conn: 11}, ZNodeOrigin{Session: 1, Conn: 22}
	set := func(o ZNodeOrigin, v string) Result {
		return a.apply(from(t, o, zwrite(t, &ZNodeSetData{Path: "/n", Data: []byte(v), Version: -1})))
	}

	// Never bound: any connection of the session writes.
	require.NoError(t, set(oldConn, "a").Err)
	require.NoError(t, set(newConn, "b").Err)

	res := a.apply(zcmd(t, OpZNodeBindSession, ZNodeBinds{Binds: []ZNodeBind{{Session: 1, Conn: 22, SecretHash: h}}}))
	require.NoError(t, res.Err)
	require.Equal(t, []bool{true}, res.Out)
	l, _ := a.s.Lease(1)
	require.Equal(t, uint64(22), l.ZKConn)

	before, rev := mustZ(t, a, "/n"), a.s.Revision()
	for name, c := range map[string]*Command{
		"setData": from(t, oldConn, zwrite(t, &ZNodeSetData{Path: "/n", Data: []byte("x"), Version: -1})),
		"create":  from(t, oldConn, zwrite(t, &ZNodeCreate{Path: "/n/c", ACL: worldAll, Ephemeral: true, Session: 1})),
		"delete":  from(t, oldConn, zwrite(t, &ZNodeDelete{Path: "/n", Version: -1})),
		"setACL":  from(t, oldConn, zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: "/n", ACL: worldAll, Version: -1})),
		"multi": from(t, oldConn, zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{
			{SetData: &ZNodeSetData{Path: "/n", Data: []byte("m"), Version: -1}}}})),
	} {
		res := a.apply(c)
		require.ErrorIs(t, res.Err, ErrZNodeSessionMoved, name)
		require.Empty(t, res.ZNodeEvents, name)
		require.Equal(t, before, mustZ(t, a, "/n"), name)
		require.Equal(t, rev, a.s.Revision(), name)
	}
	_, ok := a.s.ZNode("/n/c")
	require.False(t, ok)

	require.NoError(t, set(newConn, "c").Err)
	require.NoError(t, a.apply(zwrite(t, &ZNodeSetData{Path: "/n", Data: []byte("d"), Version: -1})).Err)
	require.Equal(t, "d", string(mustZ(t, a, "/n").Data))

	// The bind is in the snapshot: a restored replica decides the same.
	r, err := Restore(mustSnapshot(t, a.s))
	require.NoError(t, err)
	b := &applier{t: t, s: r, index: a.index}
	require.ErrorIs(t, b.apply(from(t, oldConn, zwrite(t, &ZNodeDelete{Path: "/n", Version: -1}))).Err, ErrZNodeSessionMoved)

	// The session ends: no write from it applies, from any connection.
	require.NoError(t, a.apply(zcmd(t, OpLeaseRevoke, LeaseRevokePayload{IDs: []int64{1}})).Err)
	require.ErrorIs(t, set(newConn, "e").Err, ErrZNodeSessionExpired)
	require.Equal(t, "d", string(mustZ(t, a, "/n").Data))
}

// A bind needs the session's secret hash: a wrong one, a session without
// one (a plain lease) or a gone session binds nothing, and the binds of
// one entry are decided one by one. A bind without a connection, or an
// entry without binds or with too many, is refused whole.
func TestZNodeBindSessionRefusals(t *testing.T) {
	a := newApplier(t)
	h := strings.Repeat("ab", 32)
	require.NoError(t, a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: h})).Err)
	require.NoError(t, a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000})).Err)
	res := a.apply(zcmd(t, OpZNodeBindSession, ZNodeBinds{Binds: []ZNodeBind{
		{Session: 1, Conn: 5, SecretHash: strings.Repeat("cd", 32)}, // wrong hash
		{Session: 2, Conn: 5},                // no hash
		{Session: 9, Conn: 5, SecretHash: h}, // gone
		{Session: 1, Conn: 6, SecretHash: h}, // bound
	}}))
	require.NoError(t, res.Err)
	require.Equal(t, []bool{false, false, false, true}, res.Out)
	l1, _ := a.s.Lease(1)
	l2, _ := a.s.Lease(2)
	require.Equal(t, uint64(6), l1.ZKConn)
	require.Zero(t, l2.ZKConn)

	for name, p := range map[string]ZNodeBinds{
		"conn 0":   {Binds: []ZNodeBind{{Session: 1, Conn: 7, SecretHash: h}, {Session: 1, SecretHash: h}}},
		"none":     {},
		"too many": {Binds: make([]ZNodeBind, MaxZNodeBinds+1)},
	} {
		require.ErrorIs(t, a.apply(zcmd(t, OpZNodeBindSession, p)).Err, ErrInvalid, name)
	}
	l1, _ = a.s.Lease(1)
	require.Equal(t, uint64(6), l1.ZKConn, "refused whole: the good bind beside a bad one did not apply")
}

// Malformed wrappers are refused as bad commands; what may be wrapped is
// only a znode write.
func TestZNodeFromRefusals(t *testing.T) {
	_, err := NewZNodeFromCommand(ZNodeOrigin{Session: 1, Conn: 1}, putCmd("k", "v"))
	require.Error(t, err)
	_, err = NewZNodeFromCommand(ZNodeOrigin{Session: 1}, zwrite(t, &ZNodeDelete{Path: "/a"}))
	require.Error(t, err)
	good := from(t, ZNodeOrigin{Session: 1, Conn: 1}, zwrite(t, &ZNodeDelete{Path: "/a", Version: -1})).Value
	for name, p := range map[string][]byte{
		"empty":       {},
		"conn 0":      {2, 0, byte(OpZNodeWrite)},
		"no op":       {2, 1},
		"wrapped put": {2, 1, byte(OpPut)},
		"nested from": append([]byte{2, 1, byte(OpZNodeFrom)}, good...),
		"bad inner":   append(bytes.Clone(good), 0),
	} {
		a := newApplier(t)
		grantSessions(t, a, 1)
		require.NoError(t, zcreate(t, a, "/a", nil).Err)
		res := a.apply(&Command{Op: OpZNodeFrom, Value: p})
		require.ErrorIs(t, res.Err, ErrInvalid, name)
		mustZ(t, a, "/a")
	}
}

func FuzzZNodeFrom(f *testing.F) {
	f.Add(from(f, ZNodeOrigin{Session: 1, Conn: 7}, zwrite(f, &ZNodeSetData{Path: "/a", Data: []byte("d"), Version: -1})).Value)
	f.Add(from(f, ZNodeOrigin{Session: -3, Conn: 1 << 63}, zcmd(f, OpZNodeMulti, ZNodeMulti{})).Value)
	f.Fuzz(func(t *testing.T, p []byte) {
		o, inner, err := decodeZNodeFrom(p)
		if err == nil {
			// One encoding per value.
			c, err := NewZNodeFromCommand(o, &inner)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.Value, p) {
				t.Fatalf("re-encoding differs:\n in %x\nout %x", p, c.Value)
			}
		}
		// Applying it never panics, bound session or not.
		s := New()
		_, _ = s.Apply(1, zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: strings.Repeat("ab", 32)}).Marshal())
		_, _ = s.Apply(2, zcmd(t, OpZNodeBindSession, ZNodeBinds{Binds: []ZNodeBind{{Session: 1, Conn: 7, SecretHash: strings.Repeat("ab", 32)}}}).Marshal())
		_, _ = s.Apply(3, (&Command{Op: OpZNodeFrom, Value: p}).Marshal())
	})
}
