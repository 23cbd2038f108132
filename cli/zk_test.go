package cli

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/zktest"
)

func TestValidZNodePath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/", "/a", "/a/b", "/kafka/brokers/ids", "/é", "/a.b", "/...", "/q-0000000001"} {
		require.NoError(t, validZNodePath(p), p)
	}
	for _, p := range []string{"", "a", "a/b", "/a/", "//", "/a//b", "/.", "/a/..", "/a\x00b", "/a\x1fb", "/a\u0085", "/\ud7ff\ue000", "/\ufff5"} {
		require.Error(t, validZNodePath(p), "%q", p)
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	k, _ := kindOf(0)
	require.Equal(t, znodePersistent, k)
	k, _ = kindOf(0x1000123456789) // a session id: server 0
	require.Equal(t, znodeEphemeral, k)
	k, _ = kindOf(0x0500000000000001) // a session id: server 5
	require.Equal(t, znodeEphemeral, k)
	k, _ = kindOf(math.MinInt64)
	require.Equal(t, znodeContainer, k)
	// EphemeralType.TTL.toEphemeralOwner(600000): 0xff00000000000000 | ttl.
	ext := uint64(0xff00000000000000)
	k, ttl := kindOf(int64(ext | 600000))
	require.Equal(t, znodeTTL, k)
	require.Equal(t, 10*time.Minute, ttl)
	k, _ = kindOf(int64(ext | 1<<40 | 5)) // extended type 1: none yet
	require.Equal(t, znodeUnknownExtended, k)
}

// Not parallel, as no test that runs the App is: urfave/cli's flag parsing writes shared state.
func TestZKImportUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"zk"}, "missing command after 'corral zk'"},
		{[]string{"zk", "export"}, "unknown command 'corral zk export'"},
		{[]string{"zk", "import", "--to", "127.0.0.1:2181"}, "missing --from"},
		{[]string{"zk", "import", "--from", "127.0.0.1:2181"}, "missing --to"},
		{[]string{"zk", "import", "--from", "zk1", "--to", "127.0.0.1:2181"}, `"zk1" is not HOST:PORT`},
		{[]string{"zk", "import", "--from", "zk1:2181/app", "--to", "127.0.0.1:2181"}, "chroot (/app) is not supported"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "zk1:2181"}, "--from and --to are the same"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "--path", "app"}, "starts with /"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "--path", "/app/"}, "does not end with /"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "--path", "/a//b"}, "no empty element"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "--path", "/zookeeper/quota"}, "ZooKeeper's own tree"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "--from-auth", "digest"}, "use SCHEME:AUTH"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "--to-auth", "digest:alice"}, "digest takes user:password"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "-o", "yaml"}, "bad -o"},
		{[]string{"zk", "import", "--from", "zk1:2181", "--to", "c1:2181", "extra"}, "takes no arguments"},
	}
	for _, tc := range tests {
		_, _, err := run(t, tc.args...)
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, err.Error(), tc.want, "%v", tc.args)
	}
}

// TestZKImportNoServer: a port with nothing behind it fails within --timeout, saying what to check.
func TestZKImportNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, _, err = run(t, "zk", "import", "--from", addr, "--to", "127.0.0.1:1", "--timeout", "1s")
	require.ErrorContains(t, err, "no ZooKeeper session within 1s")
	require.Less(t, time.Since(start), 10*time.Second)
}

// startRealZK starts a standalone ZooKeeper 3.8 (zktest.Start) and returns its address; the test's cleanup kills
// it. Without java and Debian's zookeeper package it fails, unless -short skips the test.
func startRealZK(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	return zktest.Start(t, 1).Addrs[0]
}

// testZKConn opens a session with addr for the test, with auths added (SCHEME:AUTH).
func testZKConn(t *testing.T, addr string, auths ...string) *zk.Conn {
	t.Helper()
	as, err := zkAuths("auth", auths)
	require.NoError(t, err)
	c, err := dialZK(context.Background(), "test", []string{addr}, as, 30*time.Second)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// znodeCopy is what an import must carry over of one znode.
type znodeCopy struct {
	Data []byte
	ACL  []zk.ACL
	Kind znodeKind
	TTL  time.Duration
}

// zkTree reads the whole tree but / and /zookeeper.
func zkTree(t *testing.T, c *zk.Conn) map[string]znodeCopy {
	t.Helper()
	tree := map[string]znodeCopy{}
	level := []string{"/"}
	for len(level) > 0 {
		var next []string
		for _, p := range level {
			kids, _, err := c.Children(p)
			require.NoError(t, err, p)
			for _, k := range kids {
				if p == "/" && k == "zookeeper" {
					continue
				}
				next = append(next, joinPath(p, k))
			}
			if p == "/" {
				continue
			}
			data, stat, err := c.Get(p)
			require.NoError(t, err, p)
			acl, _, err := c.GetACL(p)
			require.NoError(t, err, p)
			kind, ttl := kindOf(stat.EphemeralOwner)
			tree[p] = znodeCopy{Data: data, ACL: acl, Kind: kind, TTL: ttl}
		}
		level = next
	}
	return tree
}

// zkImportJSON runs `corral zk import -o json` in-process, as main does, and decodes its report.
func zkImportJSON(t *testing.T, args ...string) (zkImportReport, error) {
	t.Helper()
	out, _, err := run(t, append([]string{"zk", "import", "-o", "json"}, args...)...)
	var r zkImportReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), "output: %s", out)
	return r, err
}

// TestZKImport_RealZooKeeper copies a tree between two real ZooKeeper 3.8 servers through the CLI and checks the
// target equals the source: data (binary too), ACLs (a digest ACL), container and TTL types, sequential names, and
// no ephemeral node. Then the re-runs: skipped without --overwrite, updated with it, --path, and a znode the
// importer may not read.
func TestZKImport_RealZooKeeper(t *testing.T) {
	from := startRealZK(t)
	to := startRealZK(t)
	const alice = "digest:alice:secret"
	src := testZKConn(t, from, alice)
	open := zk.WorldACL(zk.PermAll)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	mk := func(p string, data []byte, flags int32, acl []zk.ACL) string {
		t.Helper()
		got, err := src.Create(p, data, flags, acl)
		require.NoError(t, err, p)
		return got
	}
	mk("/app", []byte("app"), 0, open)
	mk("/app/config", binary, 0, open)
	mk("/app/config/deep", nil, 0, open)
	mk("/app/config/deep/er", []byte{}, 0, open)
	mk("/app/config/deep/er/est", []byte("leaf"), 0, append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "alice", "secret")...))
	mk("/app/queue", nil, 0, open)
	for range 2 { // consumed items: the source's counter is ahead of its children
		require.NoError(t, src.Delete(mk("/app/queue/item-", nil, zk.FlagSequence, open), -1))
	}
	seq := mk("/app/queue/item-", []byte("third"), zk.FlagSequence, open)
	require.Equal(t, "/app/queue/item-0000000002", seq)
	mk("/app/members", nil, 0, open)
	eph := mk("/app/members/me", []byte("session-bound"), zk.FlagEphemeral, open)
	mk("/secure", []byte("for alice"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
	mk("/secure/child", []byte("also alice's"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
	_, err := src.CreateContainer("/box", []byte("container"), zk.FlagContainer, open)
	require.NoError(t, err)
	mk("/box/in", nil, 0, open) // a container without children may be reaped by the server
	_, err = src.CreateTTL("/app/ttl", []byte("ttl"), zk.FlagTTL, open, time.Hour)
	require.NoError(t, err)

	want := zkTree(t, src)
	require.Equal(t, znodeEphemeral, want[eph].Kind)
	// ZooKeeper shows clients ephemeralOwner 0 for container and TTL nodes (DataNode.getClientEphemeralOwner), so
	// from a ZooKeeper source they cannot be told apart, and are copied as persistent nodes (docs/ZOOKEEPER.md).
	require.Equal(t, znodePersistent, want["/box"].Kind)
	require.Equal(t, znodePersistent, want["/app/ttl"].Kind)
	require.Equal(t, "digest", want["/secure"].ACL[0].Scheme)
	delete(want, eph)
	nodes := len(want)

	dst := testZKConn(t, to, alice)
	auth := []string{"--from", from, "--to", to, "--from-auth", alice, "--to-auth", alice}

	// A dry run reports what it would do and writes nothing.
	r, err := zkImportJSON(t, append(auth, "--dry-run")...)
	require.NoError(t, err)
	require.Equal(t, zkImportReport{From: from, To: to, Path: "/", DryRun: true, Created: nodes, EphemeralSkipped: 1}, r)
	require.Empty(t, zkTree(t, dst))

	// The import.
	r, err = zkImportJSON(t, auth...)
	require.NoError(t, err)
	require.Equal(t, zkImportReport{From: from, To: to, Path: "/", Created: nodes, EphemeralSkipped: 1}, r)
	require.Equal(t, want, zkTree(t, dst))
	// The parent's sequence counter (its cversion) is not copied, as docs/ZOOKEEPER.md warns: the target's counts
	// the one child the import created, so the next sequential child sorts before the imported one.
	next, err := dst.Create("/app/queue/item-", nil, zk.FlagSequence, open)
	require.NoError(t, err)
	require.Equal(t, "/app/queue/item-0000000001", next)
	require.NoError(t, dst.Delete(next, -1))

	// Again: everything exists. The table says so too.
	_, err = src.Set("/app", []byte("app v2"), -1)
	require.NoError(t, err)
	out, _, err := run(t, append([]string{"zk", "import"}, auth...)...)
	require.NoError(t, err)
	require.Contains(t, out, "CREATED  UPDATED  SKIPPED-EXISTING  EPHEMERAL-SKIPPED  VANISHED  FAILED\n"+
		"0        0        "+strconv.Itoa(nodes))
	got, _, err := dst.Get("/app")
	require.NoError(t, err)
	require.Equal(t, "app", string(got), "without --overwrite an existing znode keeps its data")

	// --overwrite makes the target the source again, ACL changes included.
	_, err = src.SetACL("/app/config", zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermCreate|zk.PermDelete), -1)
	require.NoError(t, err)
	r, err = zkImportJSON(t, append(auth, "--overwrite")...)
	require.NoError(t, err, "%+v", r)
	require.Equal(t, zkImportReport{From: from, To: to, Path: "/", Overwrite: true, Updated: nodes, EphemeralSkipped: 1}, r)
	want = zkTree(t, src)
	delete(want, eph)
	require.Equal(t, want, zkTree(t, dst))

	// --path copies one subtree, and its missing ancestors.
	require.NoError(t, dst.Delete("/app/config/deep/er/est", -1))
	require.NoError(t, dst.Delete("/app/config/deep/er", -1))
	require.NoError(t, dst.Delete("/app/config/deep", -1))
	r, err = zkImportJSON(t, append(auth, "--path", "/app/config/deep/er")...)
	require.NoError(t, err)
	require.Equal(t, zkImportReport{From: from, To: to, Path: "/app/config/deep/er", Created: 3, SkippedExisting: 2}, r)
	require.Equal(t, want, zkTree(t, dst))

	// A znode the importer may not read fails, is listed, and makes the command fail; the rest is copied.
	mk("/bobs", []byte("not for alice"), 0, zk.DigestACL(zk.PermAll, "bob", "pw"))
	// Without ADMIN, ZooKeeper's getACL hides digest hashes (alice:x): copying that ACL would lock everyone out.
	mk("/readonly", []byte("alice may read"), 0, zk.DigestACL(zk.PermRead, "alice", "secret"))
	mk("/zz", []byte("after"), 0, open)
	r, err = zkImportJSON(t, auth...)
	require.ErrorContains(t, err, "2 znode(s) failed to import")
	require.Equal(t, 2, r.Failed)
	require.Equal(t, 1, r.Created)
	require.Equal(t, "/bobs", r.Failures[0].Path)
	require.Contains(t, r.Failures[0].Error, "--from-auth")
	require.Equal(t, "/readonly", r.Failures[1].Path)
	require.Contains(t, r.Failures[1].Error, "hid the digest hashes")
	ok, _, err := dst.Exists("/readonly")
	require.NoError(t, err)
	require.False(t, ok)
	_, _, err = dst.Get("/zz")
	require.NoError(t, err)

	// A --path the source does not have.
	_, _, err = run(t, append([]string{"zk", "import"}, append(auth, "--path", "/nope")...)...)
	require.ErrorContains(t, err, "--path /nope does not exist in the source")
}
