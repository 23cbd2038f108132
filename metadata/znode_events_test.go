package metadata

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every znode write reports what it changed, at its own zxid, for
// ZooKeeper watches; refused writes and setACL report nothing.
func TestZNodeEvents(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 1)
	res := zcreate(t, a, "/a", nil)
	require.Equal(t, []ZNodeEvent{{Type: ZNodeCreated, Path: "/a", Zxid: int64(a.index)}}, res.ZNodeEvents)
	res = zcreate(t, a, "/a/s-", func(c *ZNodeCreate) { c.Sequential = true })
	require.Equal(t, []ZNodeEvent{{Type: ZNodeCreated, Path: "/a/s-0000000000", Zxid: int64(a.index)}}, res.ZNodeEvents)
	res = a.apply(zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/a", Data: []byte("x"), Version: -1}))
	require.Equal(t, []ZNodeEvent{{Type: ZNodeDataChanged, Path: "/a", Zxid: int64(a.index)}}, res.ZNodeEvents)
	res = a.apply(zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: "/a", ACL: worldAll, Version: -1}))
	require.NoError(t, res.Err)
	require.Empty(t, res.ZNodeEvents)
	res = a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/a/s-0000000000", Version: -1}))
	require.Equal(t, []ZNodeEvent{{Type: ZNodeDeleted, Path: "/a/s-0000000000", Zxid: int64(a.index)}}, res.ZNodeEvents)
	res = a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/nope", Version: -1}))
	require.ErrorIs(t, res.Err, ErrZNodeNoNode)
	require.Empty(t, res.ZNodeEvents)

	// A multi reports its sub-ops in order at one zxid, or nothing.
	res = a.apply(zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{
		{Create: &ZNodeCreate{Path: "/b", ACL: worldAll}},
		{SetData: &ZNodeSetData{Path: "/a", Version: -1}},
		{Check: &ZNodeCheck{Path: "/a", Version: -1}},
		{Delete: &ZNodeDelete{Path: "/b", Version: -1}},
	}}))
	require.NoError(t, res.Err)
	z := int64(a.index)
	require.Equal(t, []ZNodeEvent{{ZNodeCreated, "/b", z}, {ZNodeDataChanged, "/a", z}, {ZNodeDeleted, "/b", z}}, res.ZNodeEvents)
	res = a.apply(zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{
		{Create: &ZNodeCreate{Path: "/c", ACL: worldAll}},
		{Check: &ZNodeCheck{Path: "/a", Version: 99}},
	}}))
	require.Error(t, res.Err)
	require.Empty(t, res.ZNodeEvents)
}

// A session is a lease: revoking it (closed, or expired by the leader)
// deletes its ephemeral znodes in the same entry and reports them; an
// ephemeral create for a session that does not exist is refused, so no
// ephemeral can outlive its session.
func TestZNodeSessionIsLease(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 2)
	require.NoError(t, zcreate(t, a, "/d", nil).Err)
	for i, s := range []int64{1, 2, 1} {
		require.NoError(t, zcreate(t, a, "/d/e"+string(rune('0'+i)), func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, s }).Err)
	}
	res := a.apply(zcmd(t, OpLeaseRevoke, LeaseRevokePayload{IDs: []int64{1}}))
	require.NoError(t, res.Err)
	z := int64(a.index)
	require.Equal(t, []ZNodeEvent{{ZNodeDeleted, "/d/e0", z}, {ZNodeDeleted, "/d/e2", z}}, res.ZNodeEvents)
	names, _ := a.s.Children("/d")
	require.Equal(t, []string{"e1"}, names)
	require.Empty(t, a.s.EphemeralsOf(1))
	require.Equal(t, z, mustZ(t, a, "/d").Stat.Pzxid)

	// Expiry (the leader's revoke of passed deadlines) does the same.
	res = a.apply(zcmd(t, OpLeaseRevoke, LeaseRevokePayload{IDs: []int64{2, 7}, Expired: true}))
	require.NoError(t, res.Err)
	require.Len(t, res.ZNodeEvents, 1)
	names, _ = a.s.Children("/d")
	require.Empty(t, names)

	res = zcreate(t, a, "/d/late", func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, 1 })
	require.ErrorIs(t, res.Err, ErrZNodeSessionExpired)
	require.Empty(t, a.s.EphemeralsOf(1))
	requireZConsistent(t, a.s)
}

// A lease keeps the hash of its holder's secret, checked at grant, and
// a bad hash changes nothing (the id counter included).
func TestLeaseSecretHash(t *testing.T) {
	a := newApplier(t)
	h := strings.Repeat("ab", 32)
	res := a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: h}))
	require.NoError(t, res.Err)
	id := res.Out.(LeaseGrant).ID
	l, ok := a.s.Lease(id)
	require.True(t, ok)
	require.Equal(t, h, l.SecretHash)
	before := mustSnapshot(t, a.s)
	for _, bad := range []string{"xyz", strings.Repeat("AB", 32), strings.Repeat("a", 63)} {
		res = a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: bad}))
		require.ErrorIs(t, res.Err, ErrInvalid, bad)
	}
	res = a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, Creator: strings.Repeat("c", 65)}))
	require.ErrorIs(t, res.Err, ErrInvalid)
	b := newApplier(t)
	require.NoError(t, b.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000, SecretHash: h})).Err)
	_, _ = b.s.Apply(a.index, nil)
	_, _ = a.s.Apply(a.index+1, nil)
	_, _ = b.s.Apply(a.index+1, nil)
	require.Equal(t, mustSnapshot(t, b.s), mustSnapshot(t, a.s))
	require.NotEqual(t, before, mustSnapshot(t, a.s))
	r, err := Restore(mustSnapshot(t, a.s))
	require.NoError(t, err)
	l, _ = r.Lease(id)
	require.Equal(t, h, l.SecretHash)
}
