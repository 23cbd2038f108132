package api

import (
	"encoding/base64"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-dev/corral/metadata"
)

// The znode tree the ZooKeeper port serves (issue 20), read-only, for the
// dashboard and operators: GET /v1/znodes?path=P. Writes go through the
// ZooKeeper port only.

// Znode listing limits (GET /v1/znodes): a node may have 100,000
// children, so they come in pages.
const (
	// DefaultZNodeChildren is the children one answer lists when the
	// request names no limit.
	DefaultZNodeChildren = 1000
	// MaxZNodeChildren bounds ?limit=.
	MaxZNodeChildren = 10000
)

// ZooKeeper's permission bits (ZooDefs.Perms).
const (
	zkPermRead   = 1
	zkPermWrite  = 2
	zkPermCreate = 4
	zkPermDelete = 8
	zkPermAdmin  = 16
)

// zkDataHidden is data_hidden of a znode whose ACL does not let anyone read it.
const zkDataHidden = "the znode's ACL does not let anyone read it; read it through the ZooKeeper port with its credentials"

// znodeJSON is the answer of GET /v1/znodes.
type znodeJSON struct {
	Path      string         `json:"path"`
	Stat      znodeStatJSON  `json:"stat"`
	ACL       []znodeACLJSON `json:"acl"`
	Container bool           `json:"container"`
	TTLMS     int64          `json:"ttl_ms"`
	// Data is base64; DataText the same bytes as text when they are
	// printable UTF-8. Both are absent when DataHidden says why.
	Data       *string `json:"data,omitempty"`
	DataText   *string `json:"data_text,omitempty"`
	DataHidden string  `json:"data_hidden,omitempty"`
	// Children is one page of child names, sorted (absent when hidden);
	// More says more follow: ask again with after=Next.
	Children []string `json:"children,omitzero"`
	More     bool     `json:"more"`
	Next     string   `json:"next,omitempty"`
}

// znodeStatJSON is ZooKeeper's Stat; times are ms since the epoch and
// ephemeral_owner is hex ("0x0" for a persistent node), as zkCli shows it.
type znodeStatJSON struct {
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
}

// znodeACLJSON is one ACL entry: perms as zkCli writes them ("cdrwa") and
// as bits.
type znodeACLJSON struct {
	Scheme    string `json:"scheme"`
	ID        string `json:"id"`
	Perms     string `json:"perms"`
	PermsBits int32  `json:"perms_bits"`
}

func (s *Server) registerZNodeRoutes(mux *routeMux) {
	mux.HandleFunc("GET /v1/znodes", s.handle(s.handleZNode))
}

// handleZNode is GET /v1/znodes?path=P[&limit=N&after=NAME]: one znode's
// stat, ACL, data and a page of its children, from this controller's state
// (linearizable unless consistency=serializable).
//
// The route needs operator:read, but corral's tokens are not ZooKeeper
// identities: the dashboard and this API authenticate to nobody in the
// znode's ACL. So that they are no way around a znode's ACL, data and
// children are shown only when the ACL lets world:anyone READ, the one
// identity every ZooKeeper client has without credentials; otherwise the
// answer has the stat and ACL (what ZooKeeper's exists and getACL show)
// and data_hidden says why. Digest ids lose their password hash unless
// world:anyone holds ADMIN, as ZooKeeper's getACL redacts them.
func (s *Server) handleZNode(_ http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	p := q.Get("path")
	if p == "" {
		return nil, badRequest("the path query parameter is required: a ZooKeeper path such as /, /app or /app/config")
	}
	if err := metadata.ValidateZNodePath(p); err != nil {
		return nil, badRequest("path is not a ZooKeeper path: %v", err)
	}
	limit, ok, err := queryInt(r, "limit")
	if err != nil {
		return nil, err
	}
	if !ok {
		limit = DefaultZNodeChildren
	}
	if limit < 1 || limit > MaxZNodeChildren {
		return nil, badRequest("limit must be 1 to %d, got %d", MaxZNodeChildren, limit)
	}
	after := q.Get("after")
	if strings.Contains(after, "/") {
		return nil, badRequest("after must be a child's name (no /), got %q", after)
	}
	if err := s.readable(r); err != nil {
		return nil, err
	}
	st := s.store.State()
	n, ok := st.ZNode(p)
	if !ok {
		return nil, znodeNotFound(p)
	}
	world := worldPerms(n.ACL)
	out := &znodeJSON{Path: p, Stat: znodeStat(n.Stat), ACL: znodeACLOut(n.ACL, world&zkPermAdmin != 0),
		Container: n.Container, TTLMS: n.TTLMS}
	if world&zkPermRead == 0 {
		out.DataHidden = zkDataHidden
		return out, nil
	}
	b64 := base64.StdEncoding.EncodeToString(n.Data)
	out.Data = &b64
	if printable(n.Data) {
		text := string(n.Data)
		out.DataText = &text
	}
	// A second read of the state: a write between the two may show
	// children that num_children does not count yet (or the reverse).
	kids, ok := st.Children(p)
	if !ok {
		return nil, znodeNotFound(p) // deleted since
	}
	i := sort.Search(len(kids), func(i int) bool { return kids[i] > after })
	end := min(i+int(limit), len(kids))
	out.Children = append([]string{}, kids[i:end]...)
	if end < len(kids) {
		out.More, out.Next = true, kids[end-1]
	}
	return out, nil
}

func znodeNotFound(p string) error {
	return notFound("znode_not_found", "znode %s does not exist", p)
}

// worldPerms are the permissions a znode's ACL gives world:anyone.
func worldPerms(acl []metadata.ZNodeACL) int32 {
	var perms int32
	for _, a := range acl {
		if a.Scheme == "world" && a.ID == "anyone" {
			perms |= a.Perms
		}
	}
	return perms
}

func znodeStat(st metadata.ZNodeStat) znodeStatJSON {
	return znodeStatJSON{Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion,
		EphemeralOwner: "0x" + strconv.FormatUint(uint64(st.EphemeralOwner), 16),
		DataLength:     st.DataLength, NumChildren: st.NumChildren}
}

// znodeACLOut shows acl; without full, a digest id keeps its user name and
// loses its password hash ("user:x", as ZooKeeper's getACL shows it to a
// client without ADMIN): the hash is an unsalted SHA-1, open to guessing.
func znodeACLOut(acl []metadata.ZNodeACL, full bool) []znodeACLJSON {
	out := make([]znodeACLJSON, 0, len(acl))
	for _, a := range acl {
		id := a.ID
		if a.Scheme == "digest" && !full {
			if user, _, ok := strings.Cut(id, ":"); ok {
				id = user + ":x"
			}
		}
		out = append(out, znodeACLJSON{Scheme: a.Scheme, ID: id, Perms: permString(a.Perms), PermsBits: a.Perms})
	}
	return out
}

// permString writes perms as zkCli does: c, d, r, w, a in that order.
func permString(perms int32) string {
	var b strings.Builder
	for _, p := range []struct {
		bit int32
		c   byte
	}{{zkPermCreate, 'c'}, {zkPermDelete, 'd'}, {zkPermRead, 'r'}, {zkPermWrite, 'w'}, {zkPermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b.WriteByte(p.c)
		}
	}
	return b.String()
}

// printable reports whether data reads as text: valid UTF-8 with no
// control characters but tab, newline and carriage return.
func printable(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, r := range string(data) {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}
