package transport

import (
	"crypto/x509"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseIdentityAcceptsTheCanonicalForms(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("c", 63)
	for _, tc := range []struct {
		in   string
		want Identity
		node uint64
	}{
		{"corral://c1/controller/1", Identity{"c1", RoleController, "1"}, 1},
		{"corral://prod-eu-1/controller/42", Identity{"prod-eu-1", RoleController, "42"}, 42},
		{"corral://c/controller/18446744073709551615", Identity{"c", RoleController, "18446744073709551615"}, 1<<64 - 1},
		{"corral://" + long + "/controller/7", Identity{long, RoleController, "7"}, 7},
		{"corral://0/worker/w-1", Identity{"0", RoleWorker, "w-1"}, 0},
		{"corral://c-0123456789/worker/Node_7.example", Identity{"c-0123456789", RoleWorker, "Node_7.example"}, 0},
		{"corral://c1/worker/1", Identity{"c1", RoleWorker, "1"}, 0}, // a worker's id is not a node id
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseIdentity(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.NoError(t, got.Validate())
			require.Equal(t, tc.node, got.NodeID())
			// String is the canonical form, and parses back to the same value.
			require.Equal(t, tc.in, got.String())
			require.Equal(t, tc.in, got.URI().String())
			again, err := ParseIdentity(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

func TestParseIdentityRefuses(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"empty":                 "",
		"id 0":                  "corral://c1/controller/0",
		"leading zero":          "corral://c1/controller/01",
		"plus sign":             "corral://c1/controller/+1",
		"minus sign":            "corral://c1/controller/-1",
		"hex id":                "corral://c1/controller/0x1",
		"fraction":              "corral://c1/controller/1.0",
		"space in id":           "corral://c1/controller/%201",
		"id overflows uint64":   "corral://c1/controller/18446744073709551616",
		"controller named":      "corral://c1/controller/one",
		"unknown role":          "corral://c1/admin/1",
		"role upper-case":       "corral://c1/Controller/1",
		"role empty":            "corral://c1//1",
		"no role nor id":        "corral://c1",
		"root path":             "corral://c1/",
		"no id":                 "corral://c1/controller",
		"empty id":              "corral://c1/controller/",
		"empty worker id":       "corral://c1/worker/",
		"bad worker id":         "corral://c1/worker/-w",
		"worker id with slash":  "corral://c1/worker/w/1",
		"extra part":            "corral://c1/controller/1/2",
		"trailing slash":        "corral://c1/controller/1/",
		"double slash":          "corral://c1//controller/1",
		"no cluster":            "corral:///controller/1",
		"opaque":                "corral:c1/controller/1",
		"port":                  "corral://c1:7001/controller/1",
		"empty port":            "corral://c1:/controller/1",
		"userinfo":              "corral://admin@c1/controller/1",
		"user and password":     "corral://admin:pw@c1/controller/1",
		"empty userinfo":        "corral://@c1/controller/1",
		"query":                 "corral://c1/controller/1?x=1",
		"fragment":              "corral://c1/controller/1#x",
		"empty query":           "corral://c1/controller/1?",
		"empty fragment":        "corral://c1/controller/1#",
		"upper-case cluster":    "corral://C1/controller/1",
		"mixed-case cluster":    "corral://Prod/worker/w1",
		"cluster starts with -": "corral://-c/controller/1",
		"cluster with dot":      "corral://c.example/controller/1",
		"cluster too long":      "corral://" + strings.Repeat("c", 64) + "/controller/1",
		"escaped id":            "corral://c1/worker/w%2Dx",
		"escaped slash":         "corral://c1/worker/w%2Fx",
		"other scheme":          "https://c1/controller/1",
		"no scheme":             "//c1/controller/1",
		"bad escape":            "corral://c1/controller/%zz",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			id, err := ParseIdentity(in)
			require.Error(t, err, "parsed as %#v", id)
			require.Zero(t, id)
		})
	}
}

func TestIdentityValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id Identity
		ok bool
	}{
		{Identity{"c1", RoleController, "3"}, true},
		{Identity{"c1", RoleWorker, "w-3"}, true},
		{Identity{"c1", RoleController, "0"}, false},
		{Identity{"c1", RoleController, "03"}, false},
		{Identity{"c1", RoleController, "+3"}, false},
		{Identity{"c1", RoleController, ""}, false},
		{Identity{"c1", RoleWorker, ""}, false},
		{Identity{"c1", RoleWorker, "w x"}, false},
		{Identity{"c1", RoleWorker, strings.Repeat("w", 64)}, false},
		{Identity{"c1", "", "3"}, false},
		{Identity{"c1", "admin", "3"}, false},
		{Identity{"", RoleController, "3"}, false},
		{Identity{"C1", RoleController, "3"}, false},
		{Identity{"c1/x", RoleController, "3"}, false},
		{Identity{}, false},
	} {
		err := tc.id.Validate()
		if tc.ok {
			require.NoError(t, err, "%#v", tc.id)
		} else {
			require.Error(t, err, "%#v", tc.id)
			if tc.id.Role != RoleController || tc.id.ID != "3" {
				require.Zero(t, tc.id.NodeID(), "%#v: no node id", tc.id)
			}
		}
	}
	require.Equal(t, Identity{"c1", RoleController, "5"}, ControllerIdentity("c1", 5))
	require.Equal(t, "corral://c1/controller/5", ControllerIdentity("c1", 5).String())
	require.Equal(t, uint64(5), ControllerIdentity("c1", 5).NodeID())
	require.Zero(t, Identity{"c1", RoleWorker, "5"}.NodeID())
}

func TestValidateClusterName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "0", "c-1", "prod-eu-1", strings.Repeat("z", 63)} {
		require.NoError(t, ValidateClusterName(ok), ok)
	}
	for _, bad := range []string{"", "-a", "A", "a_b", "a.b", "a b", "a/b", "ä", strings.Repeat("z", 64)} {
		require.Error(t, ValidateClusterName(bad), bad)
	}
}

func TestIdentityOf(t *testing.T) {
	t.Parallel()
	cert := func(uris ...string) *x509.Certificate {
		c := &x509.Certificate{}
		for _, s := range uris {
			u, err := url.Parse(s)
			require.NoError(t, err)
			c.URIs = append(c.URIs, u)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		want Identity
		err  string // "" => ok
	}{
		{"controller", cert("corral://c1/controller/2"), Identity{"c1", RoleController, "2"}, ""},
		{"worker", cert("corral://c1/worker/w1"), Identity{"c1", RoleWorker, "w1"}, ""},
		{"other schemes are ignored", cert("https://example.com/x", "corral://c1/controller/2", "spiffe://c1/x"),
			Identity{"c1", RoleController, "2"}, ""},
		{"no URI", cert(), Identity{}, ErrNoIdentity.Error()},
		{"only other schemes", cert("https://c1/controller/2"), Identity{}, ErrNoIdentity.Error()},
		{"a CA's cluster URI", cert("corral://c1"), Identity{}, "want corral://CLUSTER/ROLE/ID"},
		{"two identities", cert("corral://c1/controller/2", "corral://c1/controller/3"), Identity{}, "2 corral identities"},
		{"the same identity twice", cert("corral://c1/controller/2", "corral://c1/controller/2"), Identity{}, "2 corral identities"},
		{"controller and worker", cert("corral://c1/worker/w1", "corral://c1/controller/2"), Identity{}, "2 corral identities"},
		{"a good and a bad one", cert("corral://c1/controller/2", "corral://c1/controller/0"), Identity{}, "controller id"},
		{"id 0", cert("corral://c1/controller/0"), Identity{}, "controller id"},
		{"upper-case cluster", cert("corral://C1/controller/2"), Identity{}, "cluster name"},
		{"port", cert("corral://c1:1/controller/2"), Identity{}, "want corral://CLUSTER/ROLE/ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := IdentityOf(tc.cert)
			if tc.err == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
				return
			}
			require.ErrorContains(t, err, tc.err)
			require.Zero(t, got)
		})
	}
	_, err := IdentityOf(cert())
	require.ErrorIs(t, err, ErrNoIdentity)
}

func FuzzParseIdentity(f *testing.F) {
	for _, s := range []string{
		"corral://c1/controller/1",
		"corral://c1/worker/w-1",
		"corral://c1/controller/01",
		"corral://u@c1:7/controller/1?q#f",
		"corral://c1/worker/w%2Fx",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseIdentity(s)
		if err != nil {
			if id != (Identity{}) {
				t.Fatalf("ParseIdentity(%q) failed (%v) but returned %#v", s, err, id)
			}
			return
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("ParseIdentity(%q) = %#v, which does not validate: %v", s, id, err)
		}
		if (id.NodeID() != 0) != (id.Role == RoleController) {
			t.Fatalf("ParseIdentity(%q) = %#v with node id %d", s, id, id.NodeID())
		}
		// Whatever parses has one canonical spelling that parses back to it.
		canon := id.String()
		again, err := ParseIdentity(canon)
		if err != nil {
			t.Fatalf("ParseIdentity(%q) = %#v, but its String %q does not parse: %v", s, id, canon, err)
		}
		if again != id {
			t.Fatalf("ParseIdentity(%q) = %#v, but its String %q parses as %#v", s, id, canon, again)
		}
		if again.String() != canon {
			t.Fatalf("String is not stable: %q, then %q", canon, again.String())
		}
	})
}
