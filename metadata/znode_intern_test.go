package metadata

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Stored znodes share equal ACLs (the world ACLs always, others through
// the state's bounded table), in the live state and after a restore, and
// a setACL on one node changes no other.
func TestZNodeACLsShared(t *testing.T) {
	digest := []ZNodeACL{{Scheme: "digest", ID: "u:h", Perms: 31}, {Scheme: "world", ID: "anyone", Perms: 1}}
	a := newApplier(t)
	for i := range 4 {
		require.NoError(t, zcreate(t, a, fmt.Sprintf("/w%d", i), nil).Err)
		require.NoError(t, zcreate(t, a, fmt.Sprintf("/d%d", i), func(c *ZNodeCreate) { c.ACL = digest }).Err)
	}
	sharedACL := func(s *State, p, q string) bool {
		x, y := s.ext.znode(p).ACL, s.ext.znode(q).ACL
		return &x[0] == &y[0]
	}
	for _, s := range []*State{a.s, restored(t, a.s)} {
		require.True(t, sharedACL(s, "/w0", "/w3"))
		require.True(t, sharedACL(s, "/d0", "/d3"))
		require.False(t, sharedACL(s, "/w0", "/d0"))
		require.Equal(t, digest, s.ext.znode("/d2").ACL)
		require.Equal(t, worldAll, s.ext.znode("/w2").ACL)
	}

	require.NoError(t, a.apply(zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: "/d1", ACL: worldAll[:1:1], Version: -1})).Err)
	require.Equal(t, digest, mustZ(t, a, "/d0").ACL)
	require.Equal(t, worldAll, mustZ(t, a, "/d1").ACL)
	require.True(t, sharedACL(a.s, "/d1", "/w0"))

	// A reader that appends to what it was given copies: the shared
	// slices are full.
	w := a.s.ext.znode("/w0").ACL
	require.Equal(t, len(w), cap(w))

	// ZNodeACL hands out that slice, as stored, for permission checks;
	// the root has its ACL before anything stored it.
	acl, ok := a.s.ZNodeACL("/d0")
	require.True(t, ok)
	require.Equal(t, digest, acl)
	require.Equal(t, len(acl), cap(acl))
	acl, ok = a.s.ZNodeACL("/")
	require.True(t, ok)
	require.Equal(t, worldAll, acl)
	_, ok = a.s.ZNodeACL("/nope")
	require.False(t, ok)
}

// The table of shared ACLs is bounded: past maxInternedACLs distinct
// ACLs, new ones are stored as copies and the table stops growing.
func TestZNodeACLTableBounded(t *testing.T) {
	var e extState
	for i := range maxInternedACLs + 10 {
		acl := []ZNodeACL{{Scheme: "digest", ID: fmt.Sprintf("u%d:h", i), Perms: 31}}
		got := e.internACL(acl)
		require.Equal(t, acl, got)
		require.NotSame(t, &acl[0], &got[0], "stored the caller's slice")
	}
	require.Len(t, e.acls, maxInternedACLs)
	require.Nil(t, e.internACL(nil))
}

// A one-entry world ACL decodes to the shared slice without allocating.
func TestReadWorldACLAllocatesNothing(t *testing.T) {
	enc := appendZNodeACL(nil, worldAll)
	allocs := testing.AllocsPerRun(100, func() {
		r := reader{b: enc}
		acl, err := readZNodeACL(&r, 1)
		if err != nil || &acl[0] != &worldACLs[31][0] {
			t.Fatalf("got %v, %v", acl, err)
		}
	})
	require.Zero(t, allocs)
	// Anything else still decodes in full.
	other := appendZNodeACL(nil, []ZNodeACL{{Scheme: "world", ID: "anyone", Perms: 1 << 6}})
	r := reader{b: other}
	acl, err := readZNodeACL(&r, 1)
	require.NoError(t, err)
	require.Equal(t, int32(1<<6), acl[0].Perms)
	require.Zero(t, r.remaining())
}

func restored(t *testing.T, s *State) *State {
	t.Helper()
	r, err := Restore(mustSnapshot(t, s))
	require.NoError(t, err)
	return r
}
