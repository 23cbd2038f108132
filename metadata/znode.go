package metadata

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ZooKeeper znode ops (80-89): the znode tree a ZooKeeper-protocol server
// proposes writes to. Payloads are JSON in Value, like the other
// structured ops. Semantics follow ZooKeeper's PrepRequestProcessor and
// DataTree; the errors below map 1:1 to ZooKeeper's codes, which the
// server (not this package: metadata imports nothing of ours) translates.
//
// Zxid: a znode's czxid, mzxid and pzxid are the raft log index of the
// entry that wrote them (s.applied during Apply). Raft indexes only grow,
// so zxids never decrease across leaders and restarts, as ZooKeeper
// requires; they are not dense (other ops take indexes too), which
// clients do not rely on. All sub-ops of a multi share its index, as a
// ZooKeeper multi shares one zxid.
const (
	// OpZNodeCreate creates a znode (ZNodeCreate); Out is ZNodeResult.
	OpZNodeCreate Op = 80
	// OpZNodeDelete deletes a childless znode (ZNodeDelete).
	OpZNodeDelete Op = 81
	// OpZNodeSetData replaces a znode's data (ZNodeSetData); Out is
	// ZNodeResult.
	OpZNodeSetData Op = 82
	// OpZNodeSetACL replaces a znode's ACL (ZNodeSetACL); Out is
	// ZNodeResult.
	OpZNodeSetACL Op = 83
	// OpZNodeMulti applies create, delete, setData and check sub-ops
	// atomically (ZNodeMulti); Out is []ZNodeResult, Err a
	// *ZNodeMultiError.
	OpZNodeMulti Op = 84
	// OpZNodeCloseSession deletes every ephemeral znode of a session
	// (ZNodeCloseSession), on close or expiry; Out is the deleted paths.
	OpZNodeCloseSession Op = 85
)

// Znode limits: the tree lives in memory and in every snapshot.
const (
	// MaxZNodes bounds the number of znodes (the root not counted).
	MaxZNodes = 1_000_000
	// MaxZNodeData is ZooKeeper's default jute.maxbuffer (0xfffff): no
	// znode's data may be larger.
	MaxZNodeData = 0xfffff
	// MaxZNodePath bounds a path in bytes.
	MaxZNodePath = 4096
	// MaxZNodeACL bounds the entries of one ACL.
	MaxZNodeACL = 64
	// MaxZNodeMultiOps bounds the sub-ops of one multi.
	MaxZNodeMultiOps = 1000
	// MaxZNodeTTLMS is ZooKeeper's largest TTL (EphemeralType.TTL's
	// maximum, 2^40-1 ms).
	MaxZNodeTTLMS = 1<<40 - 1
)

// maxZNodes is MaxZNodes; tests lower it to reach the limit cheaply.
var maxZNodes = MaxZNodes

// Refusals of znode ops, one per ZooKeeper error code; Result.Err wraps
// them with the path.
var (
	// ErrZNodeNoNode is ZooKeeper's NoNode (-101).
	ErrZNodeNoNode = errors.New("znode does not exist")
	// ErrZNodeExists is ZooKeeper's NodeExists (-110).
	ErrZNodeExists = errors.New("znode exists")
	// ErrZNodeBadVersion is ZooKeeper's BadVersion (-103).
	ErrZNodeBadVersion = errors.New("znode version mismatch")
	// ErrZNodeNotEmpty is ZooKeeper's NotEmpty (-111).
	ErrZNodeNotEmpty = errors.New("znode has children")
	// ErrZNodeNoChildrenForEphemerals is ZooKeeper's
	// NoChildrenForEphemerals (-108).
	ErrZNodeNoChildrenForEphemerals = errors.New("ephemeral znodes may not have children")
	// ErrZNodeSessionExpired is ZooKeeper's SessionExpired (-112): an
	// ephemeral create for a session (lease) that no longer exists.
	ErrZNodeSessionExpired = errors.New("session expired")
	// ErrZNodeBadArguments is ZooKeeper's BadArguments (-8): a bad path,
	// flag combination, TTL, or a write to the root.
	ErrZNodeBadArguments = errors.New("bad znode arguments")
	// ErrZNodeInvalidACL is ZooKeeper's InvalidACL (-114).
	ErrZNodeInvalidACL = errors.New("invalid znode ACL")
	// ErrZNodeTooLarge: data over MaxZNodeData (ZooKeeper refuses such a
	// packet; the server may map it to BadArguments).
	ErrZNodeTooLarge = errors.New("znode data too large")
	// ErrZNodeTooMany: MaxZNodes exist (the server may map it to
	// QuotaExceeded).
	ErrZNodeTooMany = errors.New("too many znodes")
)

// ZNodeACL is one ACL entry: scheme ("world", "digest", ...), id and
// permission bits (ZooKeeper's Perms: read 1, write 2, create 4, delete
// 8, admin 16). The state stores ACLs; the server enforces them.
type ZNodeACL struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  int32  `json:"perms"`
}

// ZNode is one znode as the state keeps it. Nodes are never mutated in
// place once stored (copy on write), so a multi can roll back by putting
// the old pointers back.
type ZNode struct {
	Data []byte     `json:"data"` // nil (null) and empty differ, as in ZooKeeper
	ACL  []ZNodeACL `json:"acl"`
	// EphemeralOwner is the owning session, 0 for persistent nodes.
	EphemeralOwner int64 `json:"ephemeral_owner,omitempty"`
	// TTLMS is set for TTL nodes; Container for container nodes. Their
	// expiry (and the encoded ephemeralOwner ZooKeeper shows for them) is
	// the server's.
	TTLMS     int64 `json:"ttl_ms,omitempty"`
	Container bool  `json:"container,omitempty"`
	Czxid     int64 `json:"czxid"`
	Mzxid     int64 `json:"mzxid"`
	Pzxid     int64 `json:"pzxid"`
	// Ctime and Mtime are the proposer's clock (ms), never apply's.
	Ctime    int64 `json:"ctime"`
	Mtime    int64 `json:"mtime"`
	Version  int32 `json:"version,omitempty"`
	Cversion int32 `json:"cversion,omitempty"`
	Aversion int32 `json:"aversion,omitempty"`
}

// ZNodeStat is ZooKeeper's Stat of a znode.
type ZNodeStat struct {
	Czxid, Mzxid, Pzxid         int64
	Ctime, Mtime                int64
	Version, Cversion, Aversion int32
	EphemeralOwner              int64
	DataLength, NumChildren     int32
}

// ZNodeInfo is a copy of a znode for readers.
type ZNodeInfo struct {
	Path      string
	Data      []byte
	ACL       []ZNodeACL
	TTLMS     int64
	Container bool
	Stat      ZNodeStat
}

// ZNodeEventType is what happened to a znode, numbered as ZooKeeper's
// Watcher.Event.EventType (NodeCreated 1, NodeDeleted 2, NodeDataChanged
// 3); a parent's NodeChildrenChanged (4) follows from a child's created or
// deleted event.
type ZNodeEventType int32

// The znode event types.
const (
	ZNodeCreated     ZNodeEventType = 1
	ZNodeDeleted     ZNodeEventType = 2
	ZNodeDataChanged ZNodeEventType = 3
)

// ZNodeEvent is one change an applied entry made to the znode tree, for
// ZooKeeper watches (Result.ZNodeEvents). Zxid is the entry's index.
// setACL makes none: ZooKeeper fires no watch for it.
type ZNodeEvent struct {
	Type ZNodeEventType
	Path string
	Zxid int64
}

// ZNodeResult is the Out of a create, setData or setACL, and of each op of
// a multi: the path written (with a sequential suffix) and its Stat after
// the write (for a delete or check, the Stat is zero / the node's).
type ZNodeResult struct {
	Path string
	Stat ZNodeStat
}

func (n *ZNode) stat(numChildren int) ZNodeStat {
	return ZNodeStat{Czxid: n.Czxid, Mzxid: n.Mzxid, Pzxid: n.Pzxid, Ctime: n.Ctime, Mtime: n.Mtime,
		Version: n.Version, Cversion: n.Cversion, Aversion: n.Aversion, EphemeralOwner: n.EphemeralOwner,
		DataLength: int32(len(n.Data)), NumChildren: int32(numChildren)}
}

// copy returns a copy to change: Data and ACL are shared, as they are
// replaced, never changed in place.
func (n *ZNode) copy() *ZNode {
	c := *n
	return &c
}

// ValidateZNodePath reports why p is not a ZooKeeper path (PathUtils), or
// nil: absolute, no trailing slash except "/", no empty, "." or ".."
// segments, no NUL or control characters.
func ValidateZNodePath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w: path %q: %s", ErrZNodeBadArguments, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case len(p) > MaxZNodePath:
		return bad(fmt.Sprintf("longer than %d bytes", MaxZNodePath))
	case p[0] != '/':
		return bad("must start with /")
	case p == "/":
		return nil
	case p[len(p)-1] == '/':
		return bad("must not end with /")
	}
	for seg := range strings.SplitSeq(p[1:], "/") { // SplitSeq: no slice per write
		if seg == "" || seg == "." || seg == ".." {
			return bad("empty, . or .. segment")
		}
	}
	for _, r := range p {
		// PathUtils refuses NUL, other control characters and a few
		// reserved code points.
		if r == 0 || (r > 0 && r < 0x20) || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || r == 0xfffd {
			return bad("contains a refused character")
		}
	}
	return nil
}

func validateZNodeACL(acl []ZNodeACL) error {
	if len(acl) == 0 || len(acl) > MaxZNodeACL {
		return fmt.Errorf("%w: want 1 to %d entries, got %d", ErrZNodeInvalidACL, MaxZNodeACL, len(acl))
	}
	for _, a := range acl {
		if a.Scheme == "" || a.Perms&^31 != 0 || len(a.Scheme)+len(a.ID) > MaxZNodePath {
			return fmt.Errorf("%w: entry %s:%s perms %d", ErrZNodeInvalidACL, a.Scheme, a.ID, a.Perms)
		}
	}
	return nil
}

func splitZNodePath(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

// rootZNode is the root as it is before anything is created under it.
func rootZNode() *ZNode {
	return &ZNode{ACL: []ZNodeACL{{Scheme: "world", ID: "anyone", Perms: 31}}}
}

// znode returns the node at p; the root always exists (it is stored only
// once something changed it, so empty states snapshot as before).
func (e *extState) znode(p string) *ZNode {
	if n := e.ZNodes.get(p); n != nil {
		return n
	}
	if p == "/" {
		return rootZNode()
	}
	return nil
}

// ZNode returns a copy of the znode at path.
func (s *State) ZNode(path string) (ZNodeInfo, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.ext.znode(path)
	if n == nil {
		return ZNodeInfo{}, false
	}
	return ZNodeInfo{Path: path, Data: cloneZData(n.Data), ACL: append([]ZNodeACL(nil), n.ACL...),
		TTLMS: n.TTLMS, Container: n.Container, Stat: n.stat(s.ext.zkids[path].len())}, true
}

// ZNodeACL returns the ACL of the znode at path without copying its data,
// for a permission check. The slice is the state's own: stored ACLs are
// replaced, never changed in place, and are full (len == cap), so an
// append copies; callers must not write to its elements.
func (s *State) ZNodeACL(path string) ([]ZNodeACL, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.ext.znode(path)
	if n == nil {
		return nil, false
	}
	return n.ACL, true
}

// Children returns the child names of path, sorted; ok is false when
// path does not exist.
func (s *State) Children(path string) (names []string, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.ext.znode(path)
	if n == nil {
		return nil, false
	}
	return s.ext.zkids[path].names(), true
}

// AllChildrenNumber returns the number of descendants of path (not path
// itself), ZooKeeper's getAllChildrenNumber; -1 when path does not exist.
func (s *State) AllChildrenNumber(path string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.ext.znode(path)
	if n == nil {
		return -1
	}
	if path == "/" {
		return s.ext.ZNodes.len() - btoi(s.ext.ZNodes.get("/") != nil)
	}
	var count func(p string) int
	count = func(p string) int {
		kids := s.ext.zkids[p]
		c := kids.len()
		kids.each(func(k string) { c += count(p + "/" + k) })
		return c
	}
	return count(path)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// EphemeralsOf returns the paths of session's ephemeral znodes, sorted.
func (s *State) EphemeralsOf(session int64) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.ext.ephemerals[session]))
	for p := range s.ext.ephemerals[session] {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// checkZNodes refuses a snapshot whose znode tree is inconsistent and
// rebuilds the derived child lists, ephemeral index and reaper index.
func (e *extState) checkZNodes() error {
	e.ephemerals, e.zkids, e.reapable = nil, nil, nil
	if e.ZNodes.len() > maxZNodes+1 {
		return corrupt("%d znodes, more than %d", e.ZNodes.len(), maxZNodes)
	}
	paths := make([]string, 0, e.ZNodes.len())
	bad := ""
	e.ZNodes.each(func(p string, n *ZNode) {
		if n == nil || validateZNodeACL(n.ACL) != nil || len(n.Data) > MaxZNodeData || ValidateZNodePath(p) != nil {
			bad = p
			return
		}
		// The nodes are fresh from a decode, not yet shared: their ACLs
		// may still be swapped for shared ones.
		n.ACL = e.internACL(n.ACL)
		paths = append(paths, p)
	})
	if bad != "" {
		return corrupt("znode %q is inconsistent", bad)
	}
	if r := e.ZNodes.get("/"); len(paths) > 0 && (r == nil || r.EphemeralOwner != 0 || r.TTLMS != 0 || r.Container) {
		return corrupt("znodes without a persistent root")
	}
	// Sorted, so that a parent is checked before its children.
	sort.Strings(paths)
	for _, p := range paths {
		if p == "/" {
			continue
		}
		n := e.ZNodes.get(p)
		parent, name := splitZNodePath(p)
		pn := e.ZNodes.get(parent)
		if pn == nil || pn.EphemeralOwner != 0 {
			return corrupt("znode %q has no parent or an ephemeral one", p)
		}
		e.addKid(parent, name)
		if n.EphemeralOwner != 0 {
			e.addEphemeral(n.EphemeralOwner, p)
		}
		if n.reapable() {
			e.addReapable(p)
		}
	}
	return nil
}

func (e *extState) addEphemeral(session int64, p string) {
	if e.ephemerals == nil {
		e.ephemerals = map[int64]map[string]struct{}{}
	}
	if e.ephemerals[session] == nil {
		e.ephemerals[session] = map[string]struct{}{}
	}
	e.ephemerals[session][p] = struct{}{}
}

func (e *extState) removeEphemeral(session int64, p string) {
	delete(e.ephemerals[session], p)
	if len(e.ephemerals[session]) == 0 {
		delete(e.ephemerals, session)
	}
}
