package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
)

var zkWorldAll = []metadata.ZNodeACL{{Scheme: "world", ID: "anyone", Perms: 31}}

// zcreate creates a znode in f's state, as the ZooKeeper server's
// proposal would.
func (f *fixture) zcreate(t *testing.T, c metadata.ZNodeCreate) {
	t.Helper()
	if c.ACL == nil {
		c.ACL = zkWorldAll
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	_, err = f.store.Propose(context.Background(), &metadata.Command{Op: metadata.OpZNodeCreate, Value: b})
	require.NoError(t, err, c.Path)
}

// znodeAnswer is GET /v1/znodes's answer as a client decodes it.
type znodeAnswer struct {
	Path string `json:"path"`
	Stat struct {
		Czxid          int64  `json:"czxid"`
		Mzxid          int64  `json:"mzxid"`
		Pzxid          int64  `json:"pzxid"`
		Ctime          int64  `json:"ctime"`
		Mtime          int64  `json:"mtime"`
		Version        int32  `json:"version"`
		Cversion       int32  `json:"cversion"`
		Aversion       int32  `json:"aversion"`
		EphemeralOwner string `json:"ephemeral_owner"`
		DataLength     int32  `json:"data_length"`
		NumChildren    int32  `json:"num_children"`
	} `json:"stat"`
	ACL []struct {
		Scheme    string `json:"scheme"`
		ID        string `json:"id"`
		Perms     string `json:"perms"`
		PermsBits int32  `json:"perms_bits"`
	} `json:"acl"`
	Container  bool      `json:"container"`
	TTLMS      int64     `json:"ttl_ms"`
	Data       *string   `json:"data"`
	DataText   *string   `json:"data_text"`
	DataHidden string    `json:"data_hidden"`
	Children   *[]string `json:"children"`
	More       bool      `json:"more"`
	Next       string    `json:"next"`
}

func (f *fixture) znode(t *testing.T, query string) znodeAnswer {
	t.Helper()
	rec := f.do("GET", "/v1/znodes?"+query, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var a znodeAnswer
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&a))
	return a
}

func TestZNodes_RootAndNested(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	// The root exists before anything is created.
	root := f.znode(t, "path=/")
	require.Equal(t, "/", root.Path)
	require.NotNil(t, root.Children)
	require.Empty(t, *root.Children)
	require.Equal(t, "0x0", root.Stat.EphemeralOwner)
	require.Len(t, root.ACL, 1)
	require.Equal(t, "cdrwa", root.ACL[0].Perms)
	require.EqualValues(t, 31, root.ACL[0].PermsBits)

	f.zcreate(t, metadata.ZNodeCreate{Path: "/app", AtMS: 1_700_000_000_000})
	f.zcreate(t, metadata.ZNodeCreate{Path: "/app/config", Data: []byte("{\"a\": 1}\n"), AtMS: 1_700_000_000_500,
		ACL: []metadata.ZNodeACL{{Scheme: "world", ID: "anyone", Perms: 1 | 2}}})
	f.zcreate(t, metadata.ZNodeCreate{Path: "/app/box", Container: true, AtMS: 1})
	f.zcreate(t, metadata.ZNodeCreate{Path: "/app/ttl", TTLMS: 60000, AtMS: 1})
	f.zcreate(t, metadata.ZNodeCreate{Path: "/zoo", AtMS: 1})

	root = f.znode(t, "path=/")
	require.Equal(t, []string{"app", "zoo"}, *root.Children)
	require.EqualValues(t, 2, root.Stat.NumChildren)
	require.False(t, root.More)

	app := f.znode(t, "path=/app&consistency=serializable")
	require.Equal(t, []string{"box", "config", "ttl"}, *app.Children)
	require.EqualValues(t, 1, app.Stat.Czxid)
	require.EqualValues(t, 1_700_000_000_000, app.Stat.Ctime)
	require.EqualValues(t, 3, app.Stat.Cversion)
	require.Greater(t, app.Stat.Pzxid, app.Stat.Czxid)
	require.NotNil(t, app.Data, "empty data is shown as empty, not hidden")
	require.Empty(t, *app.Data)
	require.Empty(t, app.DataHidden)

	cfg := f.znode(t, "path="+url.QueryEscape("/app/config"))
	require.Equal(t, "/app/config", cfg.Path)
	require.NotNil(t, cfg.DataText)
	require.Equal(t, "{\"a\": 1}\n", *cfg.DataText, "text with a newline is text")
	require.Equal(t, base64.StdEncoding.EncodeToString([]byte("{\"a\": 1}\n")), *cfg.Data)
	require.EqualValues(t, 9, cfg.Stat.DataLength)
	require.EqualValues(t, 2, cfg.Stat.Czxid)
	require.Equal(t, cfg.Stat.Czxid, cfg.Stat.Mzxid)
	require.EqualValues(t, 1_700_000_000_500, cfg.Stat.Mtime)
	require.Equal(t, "rw", cfg.ACL[0].Perms)
	require.NotNil(t, cfg.Children)
	require.Empty(t, *cfg.Children)

	require.True(t, f.znode(t, "path=/app/box").Container)
	require.EqualValues(t, 60000, f.znode(t, "path=/app/ttl").TTLMS)
}

func TestZNodes_BinaryData(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bin := []byte{0, 1, 2, 0xff, 'a'}
	f.zcreate(t, metadata.ZNodeCreate{Path: "/bin", Data: bin, AtMS: 1})
	f.zcreate(t, metadata.ZNodeCreate{Path: "/ctl", Data: []byte("a\x1bb"), AtMS: 1})
	f.zcreate(t, metadata.ZNodeCreate{Path: "/utf", Data: []byte("héllo ☃"), AtMS: 1})

	a := f.znode(t, "path=/bin")
	require.Nil(t, a.DataText, "invalid UTF-8 is not text")
	require.NotNil(t, a.Data)
	got, err := base64.StdEncoding.DecodeString(*a.Data)
	require.NoError(t, err)
	require.Equal(t, bin, got)
	require.EqualValues(t, 5, a.Stat.DataLength)

	require.Nil(t, f.znode(t, "path=/ctl").DataText, "a control character is not text")
	u := f.znode(t, "path=/utf")
	require.NotNil(t, u.DataText)
	require.Equal(t, "héllo ☃", *u.DataText)
}

func TestZNodes_ChildrenPaged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.zcreate(t, metadata.ZNodeCreate{Path: "/q", AtMS: 1})
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("n-%02d", i)
		want = append(want, name)
		f.zcreate(t, metadata.ZNodeCreate{Path: "/q/" + name, AtMS: 1})
	}
	var got []string
	after := ""
	pages := 0
	for {
		a := f.znode(t, "path=/q&limit=10&after="+url.QueryEscape(after))
		pages++
		require.NotNil(t, a.Children)
		require.LessOrEqual(t, len(*a.Children), 10)
		got = append(got, *a.Children...)
		require.EqualValues(t, 25, a.Stat.NumChildren, "the stat counts every child")
		if !a.More {
			require.Empty(t, a.Next)
			break
		}
		require.Equal(t, (*a.Children)[len(*a.Children)-1], a.Next)
		after = a.Next
	}
	require.Equal(t, want, got)
	require.Equal(t, 3, pages)

	// Exactly limit children left: no more.
	a := f.znode(t, "path=/q&limit=5&after=n-19")
	require.Equal(t, []string{"n-20", "n-21", "n-22", "n-23", "n-24"}, *a.Children)
	require.False(t, a.More)
	// after need not name a child; past the last, the page is empty.
	require.Equal(t, []string{"n-10"}, *f.znode(t, "path=/q&limit=1&after=n-09x").Children)
	a = f.znode(t, "path=/q&after=zzz")
	require.NotNil(t, a.Children)
	require.Empty(t, *a.Children)
	require.False(t, a.More)
	// The default page holds all 25.
	require.Len(t, *f.znode(t, "path=/q").Children, 25)
}

func TestZNodes_Errors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.zcreate(t, metadata.ZNodeCreate{Path: "/a", AtMS: 1})
	for _, tc := range []struct {
		name, query string
		status      int
		code, says  string
	}{
		{"no path", "", http.StatusBadRequest, "bad_request", "path query parameter is required"},
		{"empty path", "path=", http.StatusBadRequest, "bad_request", "path query parameter is required"},
		{"relative", "path=a", http.StatusBadRequest, "bad_request", "must start with /"},
		{"trailing slash", "path=/a/", http.StatusBadRequest, "bad_request", "must not end with /"},
		{"dot dot", "path=/a/..", http.StatusBadRequest, "bad_request", "segment"},
		{"empty segment", "path=/a//b", http.StatusBadRequest, "bad_request", "segment"},
		{"control character", "path=" + url.QueryEscape("/a\x01"), http.StatusBadRequest, "bad_request", "refused character"},
		{"limit zero", "path=/a&limit=0", http.StatusBadRequest, "bad_request", "limit must be 1 to 10000"},
		{"limit too big", "path=/a&limit=10001", http.StatusBadRequest, "bad_request", "limit must be 1 to 10000"},
		{"limit not a number", "path=/a&limit=x", http.StatusBadRequest, "bad_request", "limit"},
		{"after a path", "path=/a&after=b/c", http.StatusBadRequest, "bad_request", "after"},
		{"bad consistency", "path=/a&consistency=eventual", http.StatusBadRequest, "bad_request", "consistency"},
		{"absent", "path=/nope", http.StatusNotFound, "znode_not_found", "/nope"},
		{"absent child", "path=/a/b", http.StatusNotFound, "znode_not_found", "/a/b"},
		{"the virtual /zookeeper", "path=/zookeeper", http.StatusNotFound, "znode_not_found", "/zookeeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.do("GET", "/v1/znodes?"+tc.query, "")
			m := requireAnswer(t, rec, tc.status, tc.code)
			require.Contains(t, m["error"], tc.says)
		})
	}

	// Reads are linearizable by default: without a quorum they fail,
	// serializable ones answer from the local state.
	f.store.mu.Lock()
	f.store.err = fault.ErrNoLeader
	f.store.mu.Unlock()
	requireAnswer(t, f.do("GET", "/v1/znodes?path=/a", ""), http.StatusServiceUnavailable, "no_leader")
	require.Equal(t, "/a", f.znode(t, "path=/a&consistency=serializable").Path)
}

// TestZNodes_ACLHidesDataAndChildren: corral tokens are no ZooKeeper
// identity, so a znode whose ACL does not let world:anyone read shows its
// stat and (redacted) ACL only.
func TestZNodes_ACLHidesDataAndChildren(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	digest := []metadata.ZNodeACL{{Scheme: "digest", ID: "alice:XvK7WN0UjNv7b7eCfvI5mXyqQ8Y=", Perms: 31}}
	f.zcreate(t, metadata.ZNodeCreate{Path: "/secret", Data: []byte("password=hunter2"), ACL: digest, AtMS: 1})
	f.zcreate(t, metadata.ZNodeCreate{Path: "/secret/child-name", Data: []byte("x"), AtMS: 1})
	// world may write but not read: still hidden.
	f.zcreate(t, metadata.ZNodeCreate{Path: "/drop", Data: []byte("in"), AtMS: 1,
		ACL: []metadata.ZNodeACL{{Scheme: "world", ID: "anyone", Perms: 2 | 4}}})
	// world may read but not administer: shown, the digest redacted.
	f.zcreate(t, metadata.ZNodeCreate{Path: "/shared", Data: []byte("hello"), AtMS: 1,
		ACL: []metadata.ZNodeACL{digest[0], {Scheme: "world", ID: "anyone", Perms: 1}}})
	// world administers: the full ACL.
	f.zcreate(t, metadata.ZNodeCreate{Path: "/open", AtMS: 1,
		ACL: []metadata.ZNodeACL{digest[0], {Scheme: "world", ID: "anyone", Perms: 31}}})

	rec := f.do("GET", "/v1/znodes?path=/secret", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NotContains(t, rec.Body.String(), "hunter2")
	require.NotContains(t, rec.Body.String(), base64.StdEncoding.EncodeToString([]byte("password=hunter2")))
	require.NotContains(t, rec.Body.String(), "child-name")
	require.NotContains(t, rec.Body.String(), "XvK7WN0UjNv7b7eCfvI5mXyqQ8Y=", "no digest hash")
	s := f.znode(t, "path=/secret")
	require.Nil(t, s.Data)
	require.Nil(t, s.DataText)
	require.Nil(t, s.Children)
	require.Equal(t, zkDataHidden, s.DataHidden)
	require.EqualValues(t, 16, s.Stat.DataLength, "the stat is shown")
	require.EqualValues(t, 1, s.Stat.NumChildren)
	require.Len(t, s.ACL, 1)
	require.Equal(t, "digest", s.ACL[0].Scheme)
	require.Equal(t, "alice:x", s.ACL[0].ID)
	require.Equal(t, "cdrwa", s.ACL[0].Perms)
	// Its world-readable child is shown: ZooKeeper checks each node's own
	// ACL, not its parents'.
	require.Equal(t, "x", *f.znode(t, "path=/secret/child-name").DataText)

	d := f.znode(t, "path=/drop")
	require.Nil(t, d.Data)
	require.Equal(t, zkDataHidden, d.DataHidden)
	require.Equal(t, "cw", d.ACL[0].Perms)

	sh := f.znode(t, "path=/shared")
	require.Equal(t, "hello", *sh.DataText)
	require.Empty(t, sh.DataHidden)
	require.Equal(t, "alice:x", sh.ACL[0].ID)
	require.Equal(t, "r", sh.ACL[1].Perms)

	o := f.znode(t, "path=/open")
	require.Equal(t, digest[0].ID, o.ACL[0].ID)
}

func TestZNodes_NeedsOperatorRead(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t)
	f.zcreate(t, metadata.ZNodeCreate{Path: "/a", Data: []byte("v"), AtMS: 1})
	kv := f.token(t, root, "kv", `[{"resource": "kv", "access": "write"}, {"resource": "coord", "access": "write"}]`)
	op := f.token(t, root, "op", `[{"resource": "operator", "access": "read"}]`)

	requireAnswer(t, f.do("GET", "/v1/znodes?path=/a", ""), http.StatusUnauthorized, "unauthorized")
	requireDenied(t, f.as(kv, "GET", "/v1/znodes?path=/a", ""), "operator", "read", strp(""))
	rec := f.as(op, "GET", "/v1/znodes?path=/a", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "v", jsonBody(t, rec)["data_text"])
	require.Equal(t, http.StatusOK, f.as(root, "GET", "/v1/znodes?path=/", "").Code)
}

func TestZNodes_PermString(t *testing.T) {
	t.Parallel()
	for perms, want := range map[int32]string{0: "", 1: "r", 2: "w", 4: "c", 8: "d", 16: "a", 31: "cdrwa", 1 | 16: "ra", 4 | 8: "cd"} {
		require.Equal(t, want, permString(perms), "perms %d", perms)
	}
}
