package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var worldAll = []ZNodeACL{{Scheme: "world", ID: "anyone", Perms: 31}}

func zcmd(t testing.TB, op Op, payload any) *Command {
	b, err := json.Marshal(payload)
	require.NoError(t, err)
	return &Command{Op: op, Value: b}
}

func zcreate(t testing.TB, a *applier, path string, mod func(*ZNodeCreate)) Result {
	c := ZNodeCreate{Path: path, Data: []byte("d"), ACL: worldAll, AtMS: int64(1000 + a.index)}
	if mod != nil {
		mod(&c)
	}
	return a.apply(zcmd(t, OpZNodeCreate, c))
}

// grantSessions grants leases 1..n: ZooKeeper sessions, which an
// ephemeral create needs.
func grantSessions(t testing.TB, a *applier, n int) {
	t.Helper()
	for range n {
		require.NoError(t, a.apply(zcmd(t, OpLeaseGrant, LeaseGrantPayload{TTLMS: 10000})).Err)
	}
}

func mustZ(t testing.TB, a *applier, path string) ZNodeInfo {
	t.Helper()
	n, ok := a.s.ZNode(path)
	require.True(t, ok, path)
	return n
}

func requireZConsistent(t testing.TB, s *State) {
	t.Helper()
	c := s.ext.clone()
	require.NoError(t, c.checkZNodes())
	require.Equal(t, c.ZNodes.len(), s.ext.ZNodes.len())
	require.Len(t, s.ext.ZNodes.plain(), s.ext.ZNodes.len())
	require.Equal(t, len(c.zkids), len(s.ext.zkids))
	for p, k := range s.ext.zkids {
		require.Equal(t, c.zkids[p].names(), k.names(), "children of %s", p)
	}
	require.Equal(t, len(c.ephemerals), len(s.ext.ephemerals))
	for id, ps := range s.ext.ephemerals {
		require.Equal(t, c.ephemerals[id], ps, "ephemerals of %d", id)
	}
	require.Equal(t, len(c.reapable), len(s.ext.reapable))
	for p := range c.reapable {
		require.Contains(t, s.ext.reapable, p, "container or TTL node")
	}
}

// Stat bookkeeping as ZooKeeper does it: create sets czxid=mzxid=pzxid
// to the txn's zxid and bumps the parent's cversion and pzxid; setData
// bumps version and mzxid only; delete moves the parent's pzxid but not
// its cversion (DataTree.deleteNode).
func TestZNodeStatBookkeeping(t *testing.T) {
	a := newApplier(t)
	root := mustZ(t, a, "/")
	require.Equal(t, ZNodeStat{}, root.Stat)

	require.NoError(t, zcreate(t, a, "/a", nil).Err) // index 1
	a1 := mustZ(t, a, "/a")
	require.Equal(t, ZNodeStat{Czxid: 1, Mzxid: 1, Pzxid: 1, Ctime: 1000, Mtime: 1000, DataLength: 1}, a1.Stat)
	require.Equal(t, ZNodeStat{Pzxid: 1, Cversion: 1, NumChildren: 1}, mustZ(t, a, "/").Stat)

	res := a.apply(zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/a", Data: []byte("xyz"), Version: 0, AtMS: 5000})) // 2
	require.NoError(t, res.Err)
	want := ZNodeStat{Czxid: 1, Mzxid: 2, Pzxid: 1, Ctime: 1000, Mtime: 5000, Version: 1, DataLength: 3}
	require.Equal(t, ZNodeResult{Path: "/a", Stat: want}, res.Out)
	require.Equal(t, want, mustZ(t, a, "/a").Stat)

	require.NoError(t, zcreate(t, a, "/a/b", nil).Err) // 3
	require.NoError(t, zcreate(t, a, "/a/c", nil).Err) // 4
	st := mustZ(t, a, "/a").Stat
	require.Equal(t, int64(4), st.Pzxid)
	require.Equal(t, int32(2), st.Cversion)
	require.Equal(t, int32(2), st.NumChildren)
	require.Equal(t, int64(2), st.Mzxid, "children do not move mzxid")

	require.NoError(t, a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/a/b", Version: -1})).Err) // 5
	st = mustZ(t, a, "/a").Stat
	require.Equal(t, int64(5), st.Pzxid)
	require.Equal(t, int32(2), st.Cversion, "ZooKeeper's delete leaves cversion")
	require.Equal(t, int32(1), st.NumChildren)

	res = a.apply(zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: "/a", ACL: []ZNodeACL{{Scheme: "digest", ID: "u:h", Perms: 1}}, Version: 0})) // 6
	require.NoError(t, res.Err)
	st2 := mustZ(t, a, "/a")
	require.Equal(t, int32(1), st2.Stat.Aversion)
	require.Equal(t, int64(2), st2.Stat.Mzxid, "setACL moves no zxid")
	require.Equal(t, "digest", st2.ACL[0].Scheme)
	requireZConsistent(t, a.s)
}

func TestZNodeCreateFlags(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 77)
	require.NoError(t, zcreate(t, a, "/q", nil).Err)
	// Sequential: the suffix is the parent's cversion, 10 digits.
	for i, want := range []string{"/q/n-0000000000", "/q/n-0000000001"} {
		res := zcreate(t, a, "/q/n-", func(c *ZNodeCreate) { c.Sequential = true })
		require.NoError(t, res.Err, i)
		require.Equal(t, want, res.Out.(ZNodeResult).Path)
	}
	require.NoError(t, a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/q/n-0000000001", Version: -1})).Err)
	res := zcreate(t, a, "/q/n-", func(c *ZNodeCreate) { c.Sequential = true })
	require.Equal(t, "/q/n-0000000002", res.Out.(ZNodeResult).Path, "a delete does not make a name repeat")

	res = zcreate(t, a, "/q/", func(c *ZNodeCreate) { c.Sequential = true })
	require.NoError(t, res.Err)
	require.Equal(t, "/q/0000000003", res.Out.(ZNodeResult).Path, "a sequential path may end in /")

	res = zcreate(t, a, "/e", func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, 77 })
	require.NoError(t, res.Err)
	require.Equal(t, int64(77), res.Out.(ZNodeResult).Stat.EphemeralOwner)
	require.Equal(t, []string{"/e"}, a.s.EphemeralsOf(77))

	require.NoError(t, zcreate(t, a, "/c", func(c *ZNodeCreate) { c.Container = true }).Err)
	require.True(t, mustZ(t, a, "/c").Container)
	require.NoError(t, zcreate(t, a, "/t", func(c *ZNodeCreate) { c.TTLMS = 60000 }).Err)
	require.Equal(t, int64(60000), mustZ(t, a, "/t").TTLMS)
	require.NoError(t, zcreate(t, a, "/c/child", nil).Err, "containers have children")

	names, ok := a.s.Children("/")
	require.True(t, ok)
	require.Equal(t, []string{"c", "e", "q", "t"}, names)
	require.Equal(t, 8, a.s.AllChildrenNumber("/"))
	require.Equal(t, 3, a.s.AllChildrenNumber("/q"))
	require.Equal(t, -1, a.s.AllChildrenNumber("/nope"))
	requireZConsistent(t, a.s)
}

func TestZNodeErrors(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 5)
	require.NoError(t, zcreate(t, a, "/p", nil).Err)
	require.NoError(t, zcreate(t, a, "/p/k", nil).Err)
	require.NoError(t, zcreate(t, a, "/eph", func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, 5 }).Err)
	eph := func(c *ZNodeCreate) { c.Ephemeral = true }
	cases := []struct {
		name string
		cmd  *Command
		want error
	}{
		{"no parent", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/x/y", ACL: worldAll}), ErrZNodeNoNode},
		{"exists", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/p", ACL: worldAll}), ErrZNodeExists},
		{"root exists", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/", ACL: worldAll}), ErrZNodeExists},
		{"ephemeral parent", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/eph/c", ACL: worldAll}), ErrZNodeNoChildrenForEphemerals},
		{"no acl", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/n"}), ErrZNodeInvalidACL},
		{"bad perms", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/n", ACL: []ZNodeACL{{Scheme: "world", Perms: 64}}}), ErrZNodeInvalidACL},
		{"ephemeral without session", func() *Command {
			c := ZNodeCreate{Path: "/n", ACL: worldAll}
			eph(&c)
			return zcmd(t, OpZNodeCreate, c)
		}(), ErrZNodeBadArguments},
		{"session without ephemeral", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/n", ACL: worldAll, Session: 3}), ErrZNodeBadArguments},
		{"container ttl", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/n", ACL: worldAll, Container: true, TTLMS: 5}), ErrZNodeBadArguments},
		{"container sequential", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/n", ACL: worldAll, Container: true, Sequential: true}), ErrZNodeBadArguments},
		{"ttl range", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/n", ACL: worldAll, TTLMS: MaxZNodeTTLMS + 1}), ErrZNodeBadArguments},
		{"too large", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/n", ACL: worldAll, Data: make([]byte, MaxZNodeData+1)}), ErrZNodeTooLarge},
		{"bad path", zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/a/", ACL: worldAll}), ErrZNodeBadArguments},
		{"delete missing", zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/zz", Version: -1}), ErrZNodeNoNode},
		{"delete bad version", zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/p", Version: 3}), ErrZNodeBadVersion},
		{"delete not empty", zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/p", Version: 0}), ErrZNodeNotEmpty},
		{"delete root", zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/", Version: -1}), ErrZNodeBadArguments},
		{"set missing", zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/zz", Version: -1}), ErrZNodeNoNode},
		{"set bad version", zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/p", Version: 1}), ErrZNodeBadVersion},
		{"set too large", zcmd(t, OpZNodeSetData, ZNodeSetData{Path: "/p", Version: -1, Data: make([]byte, MaxZNodeData+1)}), ErrZNodeTooLarge},
		{"acl missing", zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: "/zz", ACL: worldAll, Version: -1}), ErrZNodeNoNode},
		{"acl bad version", zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: "/p", ACL: worldAll, Version: 2}), ErrZNodeBadVersion},
		{"acl empty", zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: "/p", Version: -1}), ErrZNodeInvalidACL},
		{"close session 0", zcmd(t, OpZNodeCloseSession, ZNodeCloseSession{}), ErrInvalid},
		{"unknown field", &Command{Op: OpZNodeCreate, Value: []byte(`{"path":"/n","bogus":1}`)}, ErrInvalid},
	}
	before := a.s.ext.encode()
	for _, tc := range cases {
		res := a.apply(tc.cmd)
		require.ErrorIs(t, res.Err, tc.want, tc.name)
	}
	// Refusals change nothing but the applied index.
	require.Equal(t, string(before), string(a.s.ext.encode()))
	requireZConsistent(t, a.s)
}

func TestZNodeLimit(t *testing.T) {
	defer func(n int) { maxZNodes = n }(maxZNodes)
	maxZNodes = 3
	a := newApplier(t)
	for _, p := range []string{"/a", "/b", "/c"} {
		require.NoError(t, zcreate(t, a, p, nil).Err)
	}
	require.ErrorIs(t, zcreate(t, a, "/d", nil).Err, ErrZNodeTooMany)
	require.NoError(t, a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/a", Version: -1})).Err)
	require.NoError(t, zcreate(t, a, "/d", nil).Err)
	requireZConsistent(t, a.s)
}

func TestValidateZNodePath(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/a.b", "/..a", "/é"} {
		require.NoError(t, ValidateZNodePath(p), p)
	}
	for _, p := range []string{"", "a", "/a/", "//", "/a//b", "/.", "/a/..", "/a\x00", "/a\x01", "/" + strings.Repeat("x", MaxZNodePath)} {
		require.ErrorIs(t, ValidateZNodePath(p), ErrZNodeBadArguments, p)
	}
}

func TestZNodeMultiAtomic(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 9)
	require.NoError(t, zcreate(t, a, "/m", nil).Err)
	before := mustSnapshot(t, a.s)
	beforeRoot := mustZ(t, a, "/")
	res := a.apply(zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{
		{Create: &ZNodeCreate{Path: "/m/s-", ACL: worldAll, Sequential: true}},
		{Create: &ZNodeCreate{Path: "/e", ACL: worldAll, Ephemeral: true, Session: 9}},
		{SetData: &ZNodeSetData{Path: "/m", Data: []byte("new"), Version: 0}},
		{Delete: &ZNodeDelete{Path: "/m/s-0000000000", Version: -1}},
		{Check: &ZNodeCheck{Path: "/m", Version: 0}}, // fails: setData made it 1
	}}))
	var me *ZNodeMultiError
	require.ErrorAs(t, res.Err, &me)
	require.Equal(t, 4, me.Index)
	require.ErrorIs(t, res.Err, ErrZNodeBadVersion)
	// Nothing changed, counters included: the byte-identical snapshot
	// differs only in the applied index.
	a2 := newApplier(t)
	grantSessions(t, a2, 9)
	require.NoError(t, zcreate(t, a2, "/m", nil).Err)
	a2.index++
	_, _ = a2.s.Apply(a2.index, nil)
	require.Equal(t, mustSnapshot(t, a2.s), mustSnapshot(t, a.s))
	require.NotEqual(t, before, mustSnapshot(t, a.s)) // applied index moved
	require.Equal(t, beforeRoot, mustZ(t, a, "/"))
	require.Empty(t, a.s.EphemeralsOf(9))
	requireZConsistent(t, a.s)

	// The same multi with a passing check applies whole, at one zxid.
	res = a.apply(zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{
		{Create: &ZNodeCreate{Path: "/m/s-", ACL: worldAll, Sequential: true}},
		{Create: &ZNodeCreate{Path: "/e", ACL: worldAll, Ephemeral: true, Session: 9}},
		{SetData: &ZNodeSetData{Path: "/m", Data: []byte("new"), Version: 0}},
		{Check: &ZNodeCheck{Path: "/m", Version: 1}},
	}}))
	require.NoError(t, res.Err)
	out := res.Out.([]ZNodeResult)
	require.Len(t, out, 4)
	require.Equal(t, "/m/s-0000000000", out[0].Path)
	zx := int64(a.index)
	require.Equal(t, zx, out[0].Stat.Czxid)
	require.Equal(t, zx, out[2].Stat.Mzxid)
	require.Equal(t, []string{"/e"}, a.s.EphemeralsOf(9))

	// A sub-op with no or two kinds is refused.
	res = a.apply(zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{{}}}))
	require.ErrorIs(t, res.Err, ErrZNodeBadArguments)
	requireZConsistent(t, a.s)
}

func TestZNodeCloseSession(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 2)
	require.NoError(t, zcreate(t, a, "/d", nil).Err)
	for i, s := range []int64{1, 2, 1, 2, 1} {
		require.NoError(t, zcreate(t, a, fmt.Sprintf("/d/e%d", i), func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, s }).Err)
	}
	res := a.apply(zcmd(t, OpZNodeCloseSession, ZNodeCloseSession{Session: 1}))
	require.NoError(t, res.Err)
	require.Equal(t, []string{"/d/e0", "/d/e2", "/d/e4"}, res.Out)
	names, _ := a.s.Children("/d")
	require.Equal(t, []string{"e1", "e3"}, names)
	require.Empty(t, a.s.EphemeralsOf(1))
	require.Equal(t, []string{"/d/e1", "/d/e3"}, a.s.EphemeralsOf(2))
	require.Equal(t, int64(a.index), mustZ(t, a, "/d").Stat.Pzxid)
	res = a.apply(zcmd(t, OpZNodeCloseSession, ZNodeCloseSession{Session: 99}))
	require.NoError(t, res.Err)
	require.Empty(t, res.Out)
	requireZConsistent(t, a.s)
}

func TestZNodeSnapshotRoundTrip(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 4)
	require.NoError(t, zcreate(t, a, "/a", nil).Err)
	require.NoError(t, zcreate(t, a, "/a/b", nil).Err)
	require.NoError(t, zcreate(t, a, "/a-", nil).Err)
	require.NoError(t, zcreate(t, a, "/a/e", func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, 4 }).Err)
	snap := mustSnapshot(t, a.s)
	r, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, snap, mustSnapshot(t, r))
	names, _ := r.Children("/a")
	require.Equal(t, []string{"b", "e"}, names)
	require.Equal(t, []string{"/a/e"}, r.EphemeralsOf(4))
	for _, p := range []string{"/", "/a", "/a/b", "/a-"} {
		x, _ := a.s.ZNode(p)
		y, _ := r.ZNode(p)
		require.Equal(t, x, y, p)
	}

	// A tree with an orphan, or a child of an ephemeral, is refused.
	for _, bad := range []func(e *extState){
		func(e *extState) { e.ZNodes.set("/a", nil) },
		func(e *extState) { e.ZNodes.set("/a/e/x", &ZNode{ACL: worldAll}) },
		func(e *extState) { e.ZNodes.set("/", nil) },
		func(e *extState) { e.ZNodes.get("/a/b").ACL = nil },
		func(e *extState) { e.ZNodes.get("/").EphemeralOwner = 3 },
	} {
		c := a.s.ext.clone()
		bad(&c)
		_, err := Restore(encodeSnapshot(a.s.applied, a.s.revision, "", newTree(), c.encode(), encodeZNodes(c.ZNodes.plain())))
		require.ErrorIs(t, err, ErrCorruptSnapshot)
	}
}

// randomZLog builds random znode commands against a scratch state so that
// many succeed.
func randomZLog(t testing.TB, seed uint64, n int) []*Command {
	rng := rand.New(rand.NewPCG(seed, 3))
	path := func() string {
		p := ""
		for range 1 + rng.IntN(3) {
			p += fmt.Sprintf("/%c", 'a'+rng.IntN(3))
		}
		return p
	}
	ver := func() int32 { return int32(rng.IntN(3)) - 1 }
	create := func() *ZNodeCreate {
		c := &ZNodeCreate{Path: path(), ACL: worldAll, Data: []byte{byte(rng.IntN(256))}, AtMS: int64(rng.IntN(1e6)), Sequential: rng.IntN(4) == 0}
		switch rng.IntN(5) {
		case 0:
			c.Ephemeral, c.Session = true, int64(1+rng.IntN(3))
		case 1:
			c.Container = true
			c.Sequential = false
		case 2:
			c.TTLMS = int64(1 + rng.IntN(1000))
		}
		return c
	}
	var out []*Command
	for range n {
		var c *Command
		switch rng.IntN(7) {
		case 0, 1:
			c = zcmd(t, OpZNodeCreate, create())
		case 2:
			c = zcmd(t, OpZNodeDelete, ZNodeDelete{Path: path(), Version: ver()})
		case 3:
			c = zcmd(t, OpZNodeSetData, ZNodeSetData{Path: path(), Data: []byte("v"), Version: ver(), AtMS: 9})
		case 4:
			c = zcmd(t, OpZNodeSetACL, ZNodeSetACL{Path: path(), ACL: worldAll, Version: ver()})
		case 5:
			var m ZNodeMulti
			for range 1 + rng.IntN(4) {
				switch rng.IntN(4) {
				case 0:
					m.Ops = append(m.Ops, ZNodeOp{Create: create()})
				case 1:
					m.Ops = append(m.Ops, ZNodeOp{Delete: &ZNodeDelete{Path: path(), Version: ver()}})
				case 2:
					m.Ops = append(m.Ops, ZNodeOp{SetData: &ZNodeSetData{Path: path(), Version: ver()}})
				default:
					m.Ops = append(m.Ops, ZNodeOp{Check: &ZNodeCheck{Path: path(), Version: ver()}})
				}
			}
			c = zcmd(t, OpZNodeMulti, m)
		default:
			c = zcmd(t, OpZNodeCloseSession, ZNodeCloseSession{Session: int64(1 + rng.IntN(3))})
		}
		out = append(out, c)
	}
	return out
}

// Two replicas applying the same znode log end byte-identical, and so
// does one restored from a snapshot midway; the tree stays consistent
// after every entry.
func TestZNodeDeterminism(t *testing.T) {
	for seed := range uint64(5) {
		cmds := randomZLog(t, seed, 600)
		a, b, c := newApplier(t), newApplier(t), newApplier(t)
		grantSessions(t, a, 3)
		grantSessions(t, b, 3)
		var okN, multiOK, multiFail int
		for i, cmd := range cmds {
			ra, rb := a.apply(cmd), b.apply(cmd)
			require.Equal(t, fmt.Sprint(ra), fmt.Sprint(rb))
			if ra.Err == nil {
				okN++
			}
			if cmd.Op == OpZNodeMulti {
				if ra.Err == nil {
					multiOK++
				} else {
					multiFail++
				}
			}
			if i%50 == 0 {
				requireZConsistent(t, a.s)
			}
			if i == len(cmds)/2 {
				r, err := Restore(mustSnapshot(t, a.s))
				require.NoError(t, err)
				c.s, c.index = r, a.index
			} else if i > len(cmds)/2 {
				require.Equal(t, fmt.Sprint(ra), fmt.Sprint(c.apply(cmd)))
			}
		}
		require.Equal(t, mustSnapshot(t, a.s), mustSnapshot(t, b.s))
		require.Equal(t, mustSnapshot(t, a.s), mustSnapshot(t, c.s))
		require.Greater(t, okN, 150, "seed %d", seed)
		require.Positive(t, multiOK)
		require.Positive(t, multiFail)
		requireZConsistent(t, a.s)
	}
}

func FuzzZNodePayload(f *testing.F) {
	f.Add(byte(0), []byte(`{"path":"/a","acl":[{"scheme":"world","id":"anyone","perms":31}],"at_ms":1}`))
	f.Add(byte(1), []byte(`{"path":"/a","version":-1}`))
	f.Add(byte(4), []byte(`{"ops":[{"create":{"path":"/x","acl":[{"scheme":"world","id":"anyone","perms":31}]}},{"check":{"path":"/nope","version":-1}}]}`))
	f.Add(byte(5), []byte(`{"session":1}`))
	f.Fuzz(func(t *testing.T, op byte, payload []byte) {
		a := newApplier(t)
		grantSessions(t, a, 1)
		require.NoError(t, zcreate(t, a, "/a", nil).Err)
		require.NoError(t, zcreate(t, a, "/a/e", func(c *ZNodeCreate) { c.Ephemeral, c.Session = true, 1 }).Err)
		res := a.apply(&Command{Op: Op(80 + op%6), Value: payload})
		if res.Err != nil && !errors.Is(res.Err, ErrInvalid) {
			var me *ZNodeMultiError
			_ = errors.As(res.Err, &me)
		}
		requireZConsistent(t, a.s)
		_, err := Restore(mustSnapshot(t, a.s))
		require.NoError(t, err)
	})
}

// A refused multi on an empty tree leaves it empty: the root it stored
// on the way is taken back too, so the snapshot is that of a state that
// never saw a znode op.
func TestZNodeMultiRollbackFromEmpty(t *testing.T) {
	a := newApplier(t)
	grantSessions(t, a, 1)
	res := a.apply(zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{
		{Create: &ZNodeCreate{Path: "/x", ACL: worldAll, Ephemeral: true, Session: 1}},
		{Create: &ZNodeCreate{Path: "/x/y", ACL: worldAll}},
	}}))
	var me *ZNodeMultiError
	require.ErrorAs(t, res.Err, &me)
	require.Equal(t, 1, me.Index)
	require.ErrorIs(t, res.Err, ErrZNodeNoChildrenForEphemerals)
	b := newApplier(t)
	grantSessions(t, b, 1)
	_, _ = b.s.Apply(a.index, nil)
	require.Equal(t, mustSnapshot(t, b.s), mustSnapshot(t, a.s))
	require.Zero(t, a.s.ext.ZNodes.len())
	require.Empty(t, a.s.EphemeralsOf(1))
	requireZConsistent(t, a.s)
}

// BenchmarkZNodeCreateSiblings creates sequential nodes under one parent,
// the queue and lock recipes' pattern: the cost per create must not grow
// with a copy of the sibling list.
func BenchmarkZNodeCreateSiblings(b *testing.B) {
	a := newApplier(b)
	require.NoError(b, zcreate(b, a, "/q", nil).Err)
	cmd := zcmd(b, OpZNodeCreate, ZNodeCreate{Path: "/q/n-", ACL: worldAll, Sequential: true, AtMS: 1})
	b.ResetTimer()
	for range b.N {
		if res := a.apply(cmd); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}
