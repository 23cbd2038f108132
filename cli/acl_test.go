package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]metadata.ACLRule{
		"kv:app/=write":   {Resource: metadata.ACLKV, Prefix: "app/", Access: metadata.ACLWrite},
		"kv=read":         {Resource: metadata.ACLKV, Access: metadata.ACLRead},
		"jobs:a=b-=write": {Resource: metadata.ACLJobs, Prefix: "a=b-", Access: metadata.ACLWrite},
		"coord:x:y=read":  {Resource: metadata.ACLCoord, Prefix: "x:y", Access: metadata.ACLRead},
		"operator=write":  {Resource: metadata.ACLOperator, Access: metadata.ACLWrite},
		"workers=read":    {Resource: metadata.ACLWorkers, Access: metadata.ACLRead},
	} {
		got, err := parseRule(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		require.Equal(t, in, ruleString(ruleOut(got)), "round trip")
	}
	for _, bad := range []string{"", "kv", "kv:app/", "kv=admin", "root=read", "operator:x=read", "=read", "kv:=", "workers:w=write"} {
		_, err := parseRule(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "--rule")
	}
}

func ruleOut(r metadata.ACLRule) client.ACLRule {
	return client.ACLRule{Resource: string(r.Resource), Prefix: r.Prefix, Access: string(r.Access)}
}

// FuzzParseRule: any --rule text parses to a valid rule or an error, and
// a parsed rule prints back to text that parses to the same rule.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"kv:app/=write", "jobs=read", "operator=write", "coord:a:b=c=read", "kv:\x00=read"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRule(s)
		if err != nil {
			return
		}
		require.NoError(t, r.Validate())
		again, err := parseRule(ruleString(ruleOut(r)))
		require.NoError(t, err)
		require.Equal(t, r, again)
	})
}
