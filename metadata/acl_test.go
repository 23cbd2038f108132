package metadata

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const aclAtMS = int64(1_700_000_000_000)

func aclToken(acc, secret, typ string, policies ...string) ACLToken {
	return ACLToken{AccessorID: acc, SecretSHA256: ACLSecretHash(secret), Name: "t-" + acc[:4], Type: typ,
		Policies: policies, CreatedAtMS: aclAtMS}
}

func aclApply(a *applier, op Op, payload any) Result {
	a.t.Helper()
	c, err := NewWorkerCommand(op, payload)
	require.NoError(a.t, err)
	return a.apply(c)
}

func TestACL_BootstrapOnce(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.False(t, a.s.ACL().Bootstrapped)
	require.Nil(t, a.s.ACL().Lookup("anything"))

	res := aclApply(a, OpACLBootstrap, ACLBootstrap{Token: aclToken("00000000000000aa", "root-secret", ACLTypeManagement)})
	require.NoError(t, res.Err)
	ix := a.s.ACL()
	require.True(t, ix.Bootstrapped)
	id := ix.Lookup("root-secret")
	require.NotNil(t, id)
	require.True(t, id.Management())
	require.True(t, id.Allows(ACLOperator, ACLWrite, ""))
	require.Nil(t, ix.Lookup("root-secreT"))

	res = aclApply(a, OpACLBootstrap, ACLBootstrap{Token: aclToken("00000000000000bb", "other", ACLTypeManagement)})
	require.ErrorIs(t, res.Err, ErrACLBootstrapped)
	require.Nil(t, a.s.ACL().Lookup("other"), "a refused bootstrap created a token")

	res = aclApply(a, OpACLBootstrap, ACLBootstrap{Token: aclToken("00000000000000cc", "x", ACLTypeClient, "p")})
	require.ErrorIs(t, res.Err, ErrInvalid)
}

func TestACL_PoliciesGrantByPrefix(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.NoError(t, aclApply(a, OpACLBootstrap, ACLBootstrap{Token: aclToken("00000000000000aa", "root", ACLTypeManagement)}).Err)
	pol := ACLPolicy{Name: "app", Rules: []ACLRule{{Resource: ACLKV, Prefix: "app/", Access: ACLWrite},
		{Resource: ACLJobs, Access: ACLRead}, {Resource: ACLWorkers, Access: ACLRead}}, ModifiedAtMS: aclAtMS}
	require.NoError(t, aclApply(a, OpACLPolicyPut, pol).Err)

	res := aclApply(a, OpACLTokenCreate, aclToken("00000000000000bb", "app-secret", ACLTypeClient, "app", "missing"))
	require.ErrorIs(t, res.Err, ErrACLPolicyUnknown)
	require.Contains(t, res.Err.Error(), `"missing"`)
	require.NoError(t, aclApply(a, OpACLTokenCreate, aclToken("00000000000000bb", "app-secret", ACLTypeClient, "app")).Err)

	id := a.s.ACL().Lookup("app-secret")
	require.NotNil(t, id)
	require.False(t, id.Management())
	for _, c := range []struct {
		res  ACLResource
		acc  ACLAccess
		name string
		want bool
	}{
		{ACLKV, ACLRead, "app/x", true},
		{ACLKV, ACLWrite, "app/x", true},
		{ACLKV, ACLRead, "app/", true},
		{ACLKV, ACLRead, "app", false}, // a range wider than the grant
		{ACLKV, ACLRead, "", false},    // every key
		{ACLKV, ACLRead, "other/", false},
		{ACLJobs, ACLRead, "web", true},
		{ACLJobs, ACLWrite, "web", false},
		{ACLWorkers, ACLWrite, "", false},
		{ACLOperator, ACLRead, "", false},
		{ACLCoord, ACLRead, "lock", false},
	} {
		require.Equal(t, c.want, id.Allows(c.res, c.acc, c.name), "%s %s %q", c.res, c.acc, c.name)
	}
	require.True(t, id.AllowsAny(ACLKV, ACLWrite))
	require.False(t, id.AllowsAny(ACLJobs, ACLWrite))

	// Replacing the policy changes the token's grants at once; deleting
	// it takes them away.
	pol.Rules = []ACLRule{{Resource: ACLKV, Prefix: "app/", Access: ACLRead}}
	pol.ModifiedAtMS++
	require.NoError(t, aclApply(a, OpACLPolicyPut, pol).Err)
	require.False(t, a.s.ACL().Lookup("app-secret").Allows(ACLKV, ACLWrite, "app/x"))
	require.NoError(t, aclApply(a, OpACLPolicyDelete, ACLPolicyDelete{Name: "app"}).Err)
	require.False(t, a.s.ACL().Lookup("app-secret").Allows(ACLKV, ACLRead, "app/x"))
	require.ErrorIs(t, aclApply(a, OpACLPolicyDelete, ACLPolicyDelete{Name: "app"}).Err, ErrACLPolicyUnknown)

	require.NoError(t, aclApply(a, OpACLTokenDelete, ACLTokenDelete{AccessorID: "00000000000000bb"}).Err)
	require.Nil(t, a.s.ACL().Lookup("app-secret"))
	require.ErrorIs(t, aclApply(a, OpACLTokenDelete, ACLTokenDelete{AccessorID: "00000000000000bb"}).Err, ErrACLTokenUnknown)
}

func TestACL_RefusesBadObjects(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	good := ACLPolicy{Name: "p", Rules: []ACLRule{{Resource: ACLKV, Access: ACLRead}}, ModifiedAtMS: aclAtMS}
	for name, mod := range map[string]func(*ACLPolicy){
		"bad name":        func(p *ACLPolicy) { p.Name = "a b" },
		"no rules":        func(p *ACLPolicy) { p.Rules = nil },
		"bad resource":    func(p *ACLPolicy) { p.Rules[0].Resource = "root" },
		"bad access":      func(p *ACLPolicy) { p.Rules[0].Access = "admin" },
		"operator prefix": func(p *ACLPolicy) { p.Rules[0] = ACLRule{Resource: ACLOperator, Prefix: "x", Access: ACLRead} },
		"long prefix":     func(p *ACLPolicy) { p.Rules[0].Prefix = strings.Repeat("k", MaxACLPrefixBytes+1) },
		"no time":         func(p *ACLPolicy) { p.ModifiedAtMS = 0 },
	} {
		p := good
		p.Rules = append([]ACLRule(nil), good.Rules...)
		mod(&p)
		require.ErrorIs(t, aclApply(a, OpACLPolicyPut, p).Err, ErrInvalid, name)
	}
	require.Empty(t, a.s.ACLPolicies())
	for name, tok := range map[string]ACLToken{
		"management with policies": aclToken("00000000000000aa", "s", ACLTypeManagement, "p"),
		"client without policies":  aclToken("00000000000000aa", "s", ACLTypeClient),
		"bad accessor":             aclToken("00000000000000AA", "s", ACLTypeClient, "p"),
		"bad type":                 aclToken("00000000000000aa", "s", "root", "p"),
	} {
		require.ErrorIs(t, aclApply(a, OpACLTokenCreate, tok).Err, ErrInvalid, name)
	}
	require.Empty(t, a.s.ACLTokens())
}

func TestACL_SnapshotKeepsIndexAndHidesSecrets(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.NoError(t, aclApply(a, OpACLBootstrap, ACLBootstrap{Token: aclToken("00000000000000aa", "root", ACLTypeManagement)}).Err)
	require.NoError(t, aclApply(a, OpACLPolicyPut, ACLPolicy{Name: "ro", Rules: []ACLRule{{Resource: ACLKV, Access: ACLRead}},
		ModifiedAtMS: aclAtMS}).Err)
	require.NoError(t, aclApply(a, OpACLTokenCreate, aclToken("00000000000000bb", "ro-secret", ACLTypeClient, "ro")).Err)
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	require.NotContains(t, string(snap), "ro-secret")

	got, err := Restore(snap)
	require.NoError(t, err)
	require.True(t, got.ACL().Bootstrapped)
	require.True(t, got.ACL().Lookup("ro-secret").Allows(ACLKV, ACLRead, "any"))

	other := New()
	require.NoError(t, other.RestoreFrom(snap))
	require.NotNil(t, other.ACL().Lookup("root"))
	for _, tk := range other.ACLTokens() {
		require.Empty(t, tk.SecretSHA256, "a listed token shows its hash")
	}
}

func TestLease_CountedPerCreator(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	grant := func(creator string) int64 {
		c, err := NewCoordCommand(OpLeaseGrant, "", LeaseGrantPayload{TTLMS: MinLeaseTTLMS, Creator: creator})
		require.NoError(t, err)
		res := a.apply(c)
		require.NoError(t, res.Err)
		return res.Out.(LeaseGrant).ID
	}
	l1 := grant("aaaa")
	grant("aaaa")
	grant("bbbb")
	grant("")
	require.Equal(t, 2, a.s.LeaseCountBy("aaaa"))
	require.Equal(t, 1, a.s.LeaseCountBy("bbbb"))
	c, err := NewCoordCommand(OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{l1}})
	require.NoError(t, err)
	require.NoError(t, a.apply(c).Err)
	require.Equal(t, 1, a.s.LeaseCountBy("aaaa"))

	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	got, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, 1, got.LeaseCountBy("aaaa"))
	require.Equal(t, 1, got.LeaseCountBy("bbbb"))
}

// A token before bootstrap is refused: it would mean nothing while ACLs
// are off, and a snapshot holding tokens but not bootstrapped is refused
// as corrupt.
func TestACL_NoTokenBeforeBootstrap(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	res := aclApply(a, OpACLTokenCreate, aclToken("00000000000000aa", "s", ACLTypeManagement))
	require.ErrorIs(t, res.Err, ErrACLNotBootstrapped)
	require.Empty(t, a.s.ACLTokens())
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	_, err = Restore(snap)
	require.NoError(t, err)
}
