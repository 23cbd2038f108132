package metadata

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func fenced(t testing.TB, rev uint64, inner *Command) *Command {
	t.Helper()
	c, err := NewACLFencedCommand(rev, inner)
	require.NoError(t, err)
	return c
}

// A write judged at an older ACL revision than the state's is refused at
// apply and changes nothing; judged at the current one, it applies as the
// command it wraps (compare fields included). Every ACL change moves the
// revision, and a snapshot keeps it.
func TestACLFenced(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(fenced(t, 0, putCmd("k", "open"))).Err, "open cluster, nothing changed")
	require.Zero(t, a.s.ACLRevision())

	require.NoError(t, aclApply(a, OpACLBootstrap, ACLBootstrap{Token: aclToken("00000000000000aa", "root", ACLTypeManagement)}).Err)
	boot := a.index
	require.Equal(t, boot, a.s.ACLRevision())
	require.Equal(t, boot, a.s.ACL().Revision)

	rev := a.s.Revision()
	for name, c := range map[string]*Command{
		"put":    putCmd("k", "stale"),
		"delete": delCmd("k"),
		"cas":    casCmd("k", "stale", 1),
		"lease":  zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000}),
	} {
		res := a.apply(fenced(t, 0, c))
		require.ErrorIs(t, res.Err, ErrACLChanged, name)
		require.Equal(t, rev, a.s.Revision(), name)
	}
	kv, _ := a.s.Get("k")
	require.Equal(t, "open", string(kv.Value))
	require.Zero(t, a.s.LeaseCount())

	require.ErrorIs(t, a.apply(fenced(t, boot, casCmd("k", "x", kv.ModRevision+1))).Err, ErrCompareFailed)
	require.NoError(t, a.apply(fenced(t, boot, casCmd("k", "now", kv.ModRevision))).Err)
	kv, _ = a.s.Get("k")
	require.Equal(t, "now", string(kv.Value))

	// A refused ACL op does not move the revision; an applied one does.
	require.Error(t, aclApply(a, OpACLTokenDelete, ACLTokenDelete{AccessorID: "00000000000000ff"}).Err)
	require.Equal(t, boot, a.s.ACLRevision())
	require.NoError(t, aclApply(a, OpACLPolicyPut, ACLPolicy{Name: "p", Rules: []ACLRule{{Resource: ACLKV, Prefix: "a/", Access: ACLRead}}, ModifiedAtMS: aclAtMS}).Err)
	pol := a.index
	require.Equal(t, pol, a.s.ACLRevision())
	require.ErrorIs(t, a.apply(fenced(t, boot, putCmd("k", "late"))).Err, ErrACLChanged)

	r, err := Restore(mustSnapshot(t, a.s))
	require.NoError(t, err)
	require.Equal(t, pol, r.ACLRevision())
	require.Equal(t, pol, r.ACL().Revision)
}

// Wrappers that cannot be are refused: nesting, unknown or ignorable
// inner ops, and bytes that do not decode.
func TestACLFencedRefusals(t *testing.T) {
	_, err := NewACLFencedCommand(1, fenced(t, 1, putCmd("k", "v")))
	require.Error(t, err)
	_, err = NewACLFencedCommand(1, &Command{Op: OpPut | IgnoreUnknownTypeFlag, Key: "k"})
	require.Error(t, err)
	for name, v := range map[string][]byte{
		"empty":   {},
		"no op":   {0},
		"unknown": {0, 200},
		"nested":  {0, byte(OpACLFenced), 0, byte(OpPut)},
	} {
		a := newApplier(t)
		res := a.apply(&Command{Op: OpACLFenced, Key: "k", Value: v})
		require.ErrorIs(t, res.Err, ErrInvalid, name)
		_, ok := a.s.Get("k")
		require.False(t, ok, name)
	}
}

// The raft loop's hooks see the op a fence wraps: a restart, a drain or a
// revocation through the API still wakes the scheduler, the assignment
// pusher and the deny-list.
func TestACLFencedEntryOp(t *testing.T) {
	restart, err := NewWorkerCommand(OpAllocRestart, AllocRestartRequest{ID: "a", AtMS: 1})
	require.NoError(t, err)
	revoke, err := NewWorkerCommand(OpCertRevoke, RevokeRequest{Serial: "1F"})
	require.NoError(t, err)
	for _, term := range []uint64{0, 7} { // format 1 and 2
		for _, rev := range []uint64{0, 1 << 40} {
			c := fenced(t, rev, restart)
			c.ID, c.Term = 99, term
			require.True(t, AffectsJobs(c.Marshal()))
			require.False(t, AffectsRevocations(c.Marshal()))
			c = fenced(t, rev, revoke)
			c.ID, c.Term = 99, term
			require.True(t, AffectsRevocations(c.Marshal()))
			require.False(t, AffectsJobs(c.Marshal()))
			c = fenced(t, rev, putCmd("k", "v"))
			c.Term = term
			require.False(t, AffectsJobs(c.Marshal()))
		}
	}
	require.False(t, AffectsJobs([]byte{CommandFormatV1, byte(OpACLFenced), 1}))
}

func FuzzACLFenced(f *testing.F) {
	f.Add(fenced(f, 0, putCmd("k", "v")).Value)
	f.Add(fenced(f, 3, zcmd(f, OpLeaseGrant, LeaseGrantPayload{TTLMS: 5000})).Value)
	f.Fuzz(func(t *testing.T, v []byte) {
		c := &Command{Op: OpACLFenced, Key: "k", Value: v}
		rev, inner, err := decodeACLFenced(c)
		if err == nil {
			// One encoding per value.
			again, err := NewACLFencedCommand(rev, inner)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Value, v) {
				t.Fatalf("re-encoding differs:\n in %x\nout %x", v, again.Value)
			}
		}
		// Applying it, or reading its op, never panics.
		_, _ = New().Apply(1, c.Marshal())
		_ = AffectsJobs(c.Marshal())
	})
}
