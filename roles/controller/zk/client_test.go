package zk

import (
	"fmt"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

func TestClientCRUD(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	c, _ := connect(t, s.Addr().String())
	acl := gozk.WorldACL(gozk.PermAll)

	p, err := c.Create("/app", []byte("v1"), 0, acl)
	require.NoError(t, err)
	require.Equal(t, "/app", p)
	_, err = c.Create("/app", nil, 0, acl)
	require.ErrorIs(t, err, gozk.ErrNodeExists)
	_, err = c.Create("/missing/x", nil, 0, acl)
	require.ErrorIs(t, err, gozk.ErrNoNode)

	data, st, err := c.Get("/app")
	require.NoError(t, err)
	require.Equal(t, []byte("v1"), data)
	require.Equal(t, int32(0), st.Version)
	require.Equal(t, int32(2), st.DataLength)
	require.NotZero(t, st.Czxid)
	require.Equal(t, b.Now().UnixMilli(), st.Ctime)

	b.advance(time.Second)
	st2, err := c.Set("/app", []byte("v2"), 0)
	require.NoError(t, err)
	require.Equal(t, int32(1), st2.Version)
	require.Greater(t, st2.Mzxid, st.Mzxid)
	require.Equal(t, st.Ctime+1000, st2.Mtime)
	_, err = c.Set("/app", []byte("v3"), 0)
	require.ErrorIs(t, err, gozk.ErrBadVersion)

	for i := 0; i < 3; i++ {
		p, err := c.Create("/app/seq-", []byte{byte(i)}, gozk.FlagSequence, acl)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("/app/seq-%010d", i), p)
	}
	kids, st, err := c.Children("/app")
	require.NoError(t, err)
	require.Equal(t, []string{"seq-0000000000", "seq-0000000001", "seq-0000000002"}, kids)
	require.Equal(t, int32(3), st.NumChildren)
	require.Equal(t, int32(3), st.Cversion)

	require.ErrorIs(t, c.Delete("/app", -1), gozk.ErrNotEmpty)
	require.ErrorIs(t, c.Delete("/app/seq-0000000000", 5), gozk.ErrBadVersion)
	require.NoError(t, c.Delete("/app/seq-0000000000", 0))
	ok, _, err := c.Exists("/app/seq-0000000000")
	require.NoError(t, err)
	require.False(t, ok)

	// The root lists the virtual /zookeeper, which answers reads.
	kids, _, err = c.Children("/")
	require.NoError(t, err)
	require.Equal(t, []string{"app", "zookeeper"}, kids)
	kids, _, err = c.Children("/zookeeper")
	require.NoError(t, err)
	require.Equal(t, []string{"config", "quota"}, kids)
	_, err = c.Create("/zookeeper", nil, 0, acl)
	require.ErrorIs(t, err, gozk.ErrNodeExists)
	_, err = c.Create("/zookeeper/mine", nil, 0, acl)
	require.ErrorIs(t, err, gozk.ErrBadArguments)

	// sync, and a bad path.
	sp, err := c.Sync("/app")
	require.NoError(t, err)
	require.Equal(t, "/app", sp)
	_, _, err = c.Get("/app/")
	require.Error(t, err)

	// Container and TTL nodes show ephemeralOwner 0, as ZooKeeper does:
	// they are no one's ephemerals. The state keeps their kind.
	_, err = c.CreateContainer("/box", nil, 4, acl)
	require.NoError(t, err)
	_, st, err = c.Get("/box")
	require.NoError(t, err)
	require.Zero(t, st.EphemeralOwner)
	_, err = c.CreateTTL("/ttl", nil, gozk.FlagTTL, acl, time.Minute)
	require.NoError(t, err)
	_, st, err = c.Get("/ttl")
	require.NoError(t, err)
	require.Zero(t, st.EphemeralOwner)
	box, _ := b.st.ZNode("/box")
	require.True(t, box.Container)
	ttl, _ := b.st.ZNode("/ttl")
	require.Equal(t, int64(60000), ttl.TTLMS)

	stats := s.Stats()
	require.Equal(t, 1, stats.Connections)
	require.Equal(t, 1, stats.Sessions)
	require.NotZero(t, stats.Ops["create"])
}

func TestClientMulti(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	c, _ := connect(t, s.Addr().String())
	acl := gozk.WorldACL(gozk.PermAll)
	_, err := c.Create("/m", nil, 0, acl)
	require.NoError(t, err)

	res, err := c.Multi(
		&gozk.CheckVersionRequest{Path: "/m", Version: 0},
		&gozk.CreateRequest{Path: "/m/a", Data: []byte("1"), Acl: acl},
		&gozk.SetDataRequest{Path: "/m/a", Data: []byte("2"), Version: 0},
		&gozk.CreateRequest{Path: "/m/b", Acl: acl},
		&gozk.DeleteRequest{Path: "/m/b", Version: 0},
	)
	require.NoError(t, err)
	require.Len(t, res, 5)
	require.Equal(t, "/m/a", res[1].String)
	require.Equal(t, int32(1), res[2].Stat.Version)
	data, _, err := c.Get("/m/a")
	require.NoError(t, err)
	require.Equal(t, []byte("2"), data)

	// Atomic: a failing op applies nothing.
	res, err = c.Multi(
		&gozk.CreateRequest{Path: "/m/c", Acl: acl},
		&gozk.DeleteRequest{Path: "/m/missing", Version: -1},
	)
	require.ErrorIs(t, err, gozk.ErrNoNode)
	require.Len(t, res, 2)
	ok, _, err := c.Exists("/m/c")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestClientEphemeralsAndSessionClose(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	c1, _ := connect(t, s.Addr().String())
	c2, _ := connect(t, s.Addr().String())
	acl := gozk.WorldACL(gozk.PermAll)
	_, err := c1.Create("/e", []byte("x"), gozk.FlagEphemeral, acl)
	require.NoError(t, err)
	p, err := c1.Create("/es-", nil, gozk.FlagEphemeral|gozk.FlagSequence, acl)
	require.NoError(t, err)
	_, st, err := c2.Get("/e")
	require.NoError(t, err)
	require.Equal(t, c1.SessionID(), st.EphemeralOwner)
	_, err = c1.Create("/e/child", nil, 0, acl)
	require.ErrorIs(t, err, gozk.ErrNoChildrenForEphemerals)

	ok, _, ch, err := c2.ExistsW("/e")
	require.NoError(t, err)
	require.True(t, ok)
	c1.Close() // closeSession: the lease goes, and its ephemerals with it
	ev := waitEvent(t, ch)
	require.Equal(t, gozk.EventNodeDeleted, ev.Type)
	ok, _, err = c2.Exists(p)
	require.NoError(t, err)
	require.False(t, ok)
	_, found := b.st.Lease(c1.SessionID())
	require.False(t, found)
}

func TestClientWatches(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	c, _ := connect(t, s.Addr().String())
	w, _ := connect(t, s.Addr().String())
	acl := gozk.WorldACL(gozk.PermAll)

	// exists on a missing node, then created.
	ok, _, ch, err := w.ExistsW("/w")
	require.NoError(t, err)
	require.False(t, ok)
	_, err = c.Create("/w", []byte("a"), 0, acl)
	require.NoError(t, err)
	require.Equal(t, gozk.Event{Type: gozk.EventNodeCreated, State: gozk.StateHasSession, Path: "/w", Server: s.Addr().String()}.Type, waitEvent(t, ch).Type)

	// data watch.
	_, _, dch, err := w.GetW("/w")
	require.NoError(t, err)
	_, err = c.Set("/w", []byte("b"), -1)
	require.NoError(t, err)
	ev := waitEvent(t, dch)
	require.Equal(t, gozk.EventNodeDataChanged, ev.Type)
	require.Equal(t, "/w", ev.Path)
	// The event came before the new data could be read.
	data, _, err := w.Get("/w")
	require.NoError(t, err)
	require.Equal(t, []byte("b"), data)

	// child watch.
	_, _, cch, err := w.ChildrenW("/w")
	require.NoError(t, err)
	_, err = c.Create("/w/k", nil, 0, acl)
	require.NoError(t, err)
	ev = waitEvent(t, cch)
	require.Equal(t, gozk.EventNodeChildrenChanged, ev.Type)
	require.Equal(t, "/w", ev.Path)

	// a watch on one's own write fires before the write's reply.
	_, _, och, err := c.GetW("/w/k")
	require.NoError(t, err)
	require.NoError(t, c.Delete("/w/k", -1))
	select {
	case ev := <-och:
		require.Equal(t, gozk.EventNodeDeleted, ev.Type)
	default:
		t.Fatal("the watch event did not precede the delete's reply")
	}
	require.Eventually(t, func() bool { return s.Stats().Watches == 0 }, 5*time.Second, time.Millisecond)
}

// TestClientACL: digest auth, enforcement, "auth" ACLs, getACL redaction.
func TestClientACL(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	owner, _ := connect(t, s.Addr().String())
	other, _ := connect(t, s.Addr().String())
	require.NoError(t, owner.AddAuth("digest", []byte("alice:secret")))

	_, err := other.Create("/a", nil, 0, []gozk.ACL{{Perms: gozk.PermAll, Scheme: "auth"}})
	require.ErrorIs(t, err, gozk.ErrInvalidACL) // no identity to put there
	_, err = owner.Create("/a", []byte("s"), 0, []gozk.ACL{{Perms: gozk.PermAll, Scheme: "auth"},
		{Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}})
	require.NoError(t, err)
	acl, _, err := owner.GetACL("/a")
	require.NoError(t, err)
	require.Contains(t, acl, gozk.ACL{Perms: gozk.PermAll, Scheme: "digest", ID: digestID("alice:secret")})
	require.Equal(t, digestID("alice:secret"), gozk.DigestACL(gozk.PermAll, "alice", "secret")[0].ID)

	// other may read, not write, create under, or see the hashes.
	_, _, err = other.Get("/a")
	require.NoError(t, err)
	_, err = other.Set("/a", nil, -1)
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	_, err = other.Create("/a/x", nil, 0, gozk.WorldACL(gozk.PermAll))
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	_, err = other.SetACL("/a", gozk.WorldACL(gozk.PermAll), -1)
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	acl, _, err = other.GetACL("/a")
	require.NoError(t, err)
	require.Contains(t, acl, gozk.ACL{Perms: gozk.PermAll, Scheme: "digest", ID: "alice:x"})

	// A node only alice reads.
	_, err = owner.Create("/a/private", []byte("p"), 0, gozk.DigestACL(gozk.PermAll, "alice", "secret"))
	require.NoError(t, err)
	_, _, err = other.Get("/a/private")
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	_, _, err = other.Children("/a/private")
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	ok, _, err := other.Exists("/a/private") // exists needs no permission
	require.NoError(t, err)
	require.True(t, ok)
	require.ErrorIs(t, other.Delete("/a/private", -1), gozk.ErrNoAuth)

	// After the same auth, other may.
	require.NoError(t, other.AddAuth("digest", []byte("alice:secret")))
	_, _, err = other.Get("/a/private")
	require.NoError(t, err)
	require.NoError(t, other.Delete("/a/private", -1))

	// A wrong password is just another identity.
	third, _ := connect(t, s.Addr().String())
	require.NoError(t, third.AddAuth("digest", []byte("alice:wrong")))
	_, err = third.Set("/a", nil, -1)
	require.ErrorIs(t, err, gozk.ErrNoAuth)
}
