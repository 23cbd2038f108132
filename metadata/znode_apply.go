package metadata

import (
	"errors"
	"fmt"
	"sort"
)

// ZNodeCreate is the payload of OpZNodeCreate and a multi's create.
type ZNodeCreate struct {
	Path string     `json:"path"`
	Data []byte     `json:"data"` // null and empty differ, as in ZooKeeper
	ACL  []ZNodeACL `json:"acl"`
	// Ephemeral ties the node to Session; Sequential appends the parent's
	// cversion as a 10-digit suffix; Container and TTLMS make container
	// and TTL nodes (persistent only, as ZooKeeper's create modes).
	Ephemeral  bool  `json:"ephemeral,omitempty"`
	Sequential bool  `json:"sequential,omitempty"`
	Container  bool  `json:"container,omitempty"`
	TTLMS      int64 `json:"ttl_ms,omitempty"`
	Session    int64 `json:"session,omitempty"`
	// AtMS is the proposer's clock, the node's ctime and mtime.
	AtMS int64 `json:"at_ms"`
}

// ZNodeDelete is the payload of OpZNodeDelete and a multi's delete;
// Version -1 matches any version.
type ZNodeDelete struct {
	Path    string `json:"path"`
	Version int32  `json:"version"`
}

// ZNodeSetData is the payload of OpZNodeSetData and a multi's setData.
type ZNodeSetData struct {
	Path    string `json:"path"`
	Data    []byte `json:"data"`
	Version int32  `json:"version"`
	AtMS    int64  `json:"at_ms"`
}

// ZNodeSetACL is the payload of OpZNodeSetACL; Version is the expected
// aversion (-1: any).
type ZNodeSetACL struct {
	Path    string     `json:"path"`
	ACL     []ZNodeACL `json:"acl"`
	Version int32      `json:"version"`
}

// ZNodeCheck is a multi's check: the node exists at Version (-1: any).
type ZNodeCheck struct {
	Path    string `json:"path"`
	Version int32  `json:"version"`
}

// ZNodeOp is one sub-op of a multi: exactly one field is set.
type ZNodeOp struct {
	Create  *ZNodeCreate  `json:"create,omitempty"`
	Delete  *ZNodeDelete  `json:"delete,omitempty"`
	SetData *ZNodeSetData `json:"set_data,omitempty"`
	Check   *ZNodeCheck   `json:"check,omitempty"`
}

// ZNodeMulti is the payload of OpZNodeMulti.
type ZNodeMulti struct {
	Ops []ZNodeOp `json:"ops"`
}

// ZNodeCloseSession is the payload of OpZNodeCloseSession.
type ZNodeCloseSession struct {
	Session int64 `json:"session"`
}

// ZNodeMultiError is the Err of a refused multi: the index of the first
// failing sub-op and its error (which it unwraps to). Nothing applied.
type ZNodeMultiError struct {
	Index int
	Err   error
}

// Error implements error.
func (e *ZNodeMultiError) Error() string { return fmt.Sprintf("multi op %d: %v", e.Index, e.Err) }

// Unwrap returns the failing op's error.
func (e *ZNodeMultiError) Unwrap() error { return e.Err }

// znodeUndo is one journalled change: a node entry (path and its node
// before the change, nil: absent), or, when kid is set, a child name
// added to or removed from path's list. Nodes are copy-on-write, so
// putting back the old pointers and inverting the child changes in
// reverse order restores the tree exactly.
type znodeUndo struct {
	path  string
	old   *ZNode
	kid   string
	added bool
}

// zput stores n at p (nil deletes), keeping the ephemeral and reaper
// indexes, and journals the old entry when undo is non-nil.
func (s *State) zput(p string, n *ZNode, undo *[]znodeUndo) {
	old := s.ext.ZNodes.set(p, n)
	if undo != nil {
		*undo = append(*undo, znodeUndo{path: p, old: old})
	}
	if old != nil && old.EphemeralOwner != 0 {
		s.ext.removeEphemeral(old.EphemeralOwner, p)
	}
	if n != nil && n.EphemeralOwner != 0 {
		s.ext.addEphemeral(n.EphemeralOwner, p)
	}
	if old != nil && old.reapable() && (n == nil || !n.reapable()) {
		delete(s.ext.reapable, p)
	}
	if n != nil && n.reapable() {
		s.ext.addReapable(p)
	}
}

// zkid adds name to (or removes it from) parent's child set, journalling
// the change when undo is non-nil.
func (s *State) zkid(parent, name string, add bool, undo *[]znodeUndo) {
	if undo != nil {
		*undo = append(*undo, znodeUndo{path: parent, kid: name, added: add})
	}
	if add {
		s.ext.addKid(parent, name)
	} else {
		s.ext.removeKid(parent, name)
	}
}

func (s *State) zrollback(undo []znodeUndo) {
	for i := len(undo) - 1; i >= 0; i-- {
		if u := undo[i]; u.kid != "" {
			s.zkid(u.path, u.kid, !u.added, nil)
		} else {
			s.zput(u.path, u.old, nil)
		}
	}
}

func checkZVersion(p string, want, have int32) error {
	if want != -1 && want != have {
		return fmt.Errorf("%w: %s is at version %d, not %d", ErrZNodeBadVersion, p, have, want)
	}
	return nil
}

func (s *State) zcreate(c *ZNodeCreate, undo *[]znodeUndo) (ZNodeResult, error) {
	// As PathUtils: a sequential path is checked with a digit appended,
	// so "/q/" makes children named by the counter alone.
	check := c.Path
	if c.Sequential {
		check += "1"
	}
	if err := ValidateZNodePath(check); err != nil {
		return ZNodeResult{}, err
	}
	if err := validateZNodeACL(c.ACL); err != nil {
		return ZNodeResult{}, fmt.Errorf("create %s: %w", c.Path, err)
	}
	switch {
	case c.Path == "/" && !c.Sequential:
		return ZNodeResult{}, fmt.Errorf("create /: %w", ErrZNodeExists)
	case len(c.Data) > MaxZNodeData:
		return ZNodeResult{}, fmt.Errorf("create %s: %w: %d bytes", c.Path, ErrZNodeTooLarge, len(c.Data))
	case c.Ephemeral != (c.Session != 0):
		return ZNodeResult{}, fmt.Errorf("%w: create %s: an ephemeral node needs a session, a persistent one none", ErrZNodeBadArguments, c.Path)
	case (c.Ephemeral && (c.Container || c.TTLMS != 0)) || (c.Container && (c.Sequential || c.TTLMS != 0)):
		return ZNodeResult{}, fmt.Errorf("%w: create %s: ephemeral, container and TTL exclude each other, and a container is not sequential", ErrZNodeBadArguments, c.Path)
	case c.TTLMS < 0 || c.TTLMS > MaxZNodeTTLMS:
		return ZNodeResult{}, fmt.Errorf("%w: create %s: TTL %d ms out of range", ErrZNodeBadArguments, c.Path, c.TTLMS)
	case c.Ephemeral && s.ext.Leases[c.Session] == nil:
		// A session is a lease (coord.go): an ephemeral of an ended one
		// would never be deleted.
		return ZNodeResult{}, fmt.Errorf("create %s: session %#x: %w", c.Path, c.Session, ErrZNodeSessionExpired)
	}
	parentPath, _ := splitZNodePath(c.Path)
	parent := s.ext.znode(parentPath)
	if parent == nil {
		return ZNodeResult{}, fmt.Errorf("create %s: parent %s: %w", c.Path, parentPath, ErrZNodeNoNode)
	}
	path := c.Path
	if c.Sequential {
		// ZooKeeper names sequential nodes after the parent's cversion,
		// formatted as a signed 10-digit number.
		path = fmt.Sprintf("%s%010d", c.Path, parent.Cversion)
		if len(path) > MaxZNodePath {
			return ZNodeResult{}, fmt.Errorf("%w: create %s: path too long", ErrZNodeBadArguments, path)
		}
	}
	if s.ext.ZNodes.get(path) != nil {
		return ZNodeResult{}, fmt.Errorf("create %s: %w", path, ErrZNodeExists)
	}
	if parent.EphemeralOwner != 0 {
		return ZNodeResult{}, fmt.Errorf("create %s: parent %s: %w", path, parentPath, ErrZNodeNoChildrenForEphemerals)
	}
	if s.ext.ZNodes.len()-btoi(s.ext.ZNodes.get("/") != nil) >= maxZNodes {
		return ZNodeResult{}, fmt.Errorf("create %s: %w: %d exist", path, ErrZNodeTooMany, maxZNodes)
	}
	zxid := int64(s.applied)
	// The node takes the payload's data over: apply's payloads are decoded
	// for it alone (readData and JSON both allocate), and a second copy
	// per write was garbage on every controller.
	n := &ZNode{Data: c.Data, ACL: s.ext.internACL(c.ACL),
		EphemeralOwner: c.Session, TTLMS: c.TTLMS, Container: c.Container,
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: c.AtMS, Mtime: c.AtMS}
	np := parent.copy()
	np.Cversion++
	np.Pzxid = zxid
	_, name := splitZNodePath(path)
	s.zput(parentPath, np, undo)
	s.zkid(parentPath, name, true, undo)
	s.zput(path, n, undo)
	// Size estimate for the proposer's quota (size.go); not replicated.
	s.extBytes += int64(len(path) + len(n.Data) + 200)
	return ZNodeResult{Path: path, Stat: n.stat(0)}, nil
}

func (s *State) zdelete(d *ZNodeDelete, undo *[]znodeUndo) (ZNodeResult, error) {
	if err := ValidateZNodePath(d.Path); err != nil {
		return ZNodeResult{}, err
	}
	if d.Path == "/" {
		return ZNodeResult{}, fmt.Errorf("%w: the root cannot be deleted", ErrZNodeBadArguments)
	}
	n := s.ext.ZNodes.get(d.Path)
	if n == nil {
		return ZNodeResult{}, fmt.Errorf("delete %s: %w", d.Path, ErrZNodeNoNode)
	}
	if err := checkZVersion(d.Path, d.Version, n.Version); err != nil {
		return ZNodeResult{}, fmt.Errorf("delete: %w", err)
	}
	if k := s.ext.zkids[d.Path].len(); k > 0 {
		return ZNodeResult{}, fmt.Errorf("delete %s: %w (%d)", d.Path, ErrZNodeNotEmpty, k)
	}
	// As ZooKeeper's DataTree.deleteNode: the parent's pzxid moves, its
	// cversion does not (only creates count in cversion, which is why
	// sequential names never repeat).
	parentPath, name := splitZNodePath(d.Path)
	np := s.ext.znode(parentPath).copy()
	np.Pzxid = int64(s.applied)
	s.zput(parentPath, np, undo)
	s.zkid(parentPath, name, false, undo)
	s.zput(d.Path, nil, undo)
	return ZNodeResult{Path: d.Path}, nil
}

func (s *State) zsetData(d *ZNodeSetData, undo *[]znodeUndo) (ZNodeResult, error) {
	if err := ValidateZNodePath(d.Path); err != nil {
		return ZNodeResult{}, err
	}
	if len(d.Data) > MaxZNodeData {
		return ZNodeResult{}, fmt.Errorf("set data %s: %w: %d bytes", d.Path, ErrZNodeTooLarge, len(d.Data))
	}
	n := s.ext.znode(d.Path)
	if n == nil {
		return ZNodeResult{}, fmt.Errorf("set data %s: %w", d.Path, ErrZNodeNoNode)
	}
	if err := checkZVersion(d.Path, d.Version, n.Version); err != nil {
		return ZNodeResult{}, fmt.Errorf("set data: %w", err)
	}
	c := n.copy()
	c.Data = d.Data // taken over, as in zcreate
	c.Version++
	c.Mzxid = int64(s.applied)
	c.Mtime = d.AtMS
	s.zput(d.Path, c, undo)
	s.extBytes += int64(len(c.Data))
	return ZNodeResult{Path: d.Path, Stat: c.stat(s.ext.zkids[d.Path].len())}, nil
}

func (s *State) zcheck(d *ZNodeCheck) (ZNodeResult, error) {
	if err := ValidateZNodePath(d.Path); err != nil {
		return ZNodeResult{}, err
	}
	n := s.ext.znode(d.Path)
	if n == nil {
		return ZNodeResult{}, fmt.Errorf("check %s: %w", d.Path, ErrZNodeNoNode)
	}
	if err := checkZVersion(d.Path, d.Version, n.Version); err != nil {
		return ZNodeResult{}, fmt.Errorf("check: %w", err)
	}
	return ZNodeResult{Path: d.Path, Stat: n.stat(s.ext.zkids[d.Path].len())}, nil
}

func (s *State) zresult(r ZNodeResult, err error, ev ZNodeEventType) Result {
	if err != nil {
		return Result{Revision: s.revision, Err: err}
	}
	res := Result{Revision: s.revision, Out: r}
	if ev != 0 {
		res.ZNodeEvents = []ZNodeEvent{{Type: ev, Path: r.Path, Zxid: int64(s.applied)}}
	}
	return res
}

func (s *State) applyZNodeCreate(c *Command) Result {
	var p ZNodeCreate
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	r, err := s.zcreate(&p, nil)
	return s.zresult(r, err, ZNodeCreated)
}

func (s *State) applyZNodeDelete(c *Command) Result {
	var p ZNodeDelete
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	r, err := s.zdelete(&p, nil)
	r.Path = p.Path
	return s.zresult(r, err, ZNodeDeleted)
}

func (s *State) applyZNodeSetData(c *Command) Result {
	var p ZNodeSetData
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	r, err := s.zsetData(&p, nil)
	return s.zresult(r, err, ZNodeDataChanged)
}

func (s *State) applyZNodeSetACL(c *Command) Result {
	var p ZNodeSetACL
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if err := ValidateZNodePath(p.Path); err != nil {
		return s.zresult(ZNodeResult{}, err, 0)
	}
	if err := validateZNodeACL(p.ACL); err != nil {
		return s.zresult(ZNodeResult{}, fmt.Errorf("set ACL %s: %w", p.Path, err), 0)
	}
	n := s.ext.znode(p.Path)
	if n == nil {
		return s.zresult(ZNodeResult{}, fmt.Errorf("set ACL %s: %w", p.Path, ErrZNodeNoNode), 0)
	}
	if p.Version != -1 && p.Version != n.Aversion {
		return s.zresult(ZNodeResult{}, fmt.Errorf("set ACL: %w: %s is at aversion %d, not %d", ErrZNodeBadVersion, p.Path, n.Aversion, p.Version), 0)
	}
	// Only aversion moves: ZooKeeper's setACL changes no zxid and fires
	// no watch.
	nc := n.copy()
	nc.ACL = s.ext.internACL(p.ACL)
	nc.Aversion++
	s.zput(p.Path, nc, nil)
	return s.zresult(ZNodeResult{Path: p.Path, Stat: nc.stat(s.ext.zkids[p.Path].len())}, nil, 0)
}

func (s *State) applyZNodeMulti(c *Command) Result {
	var m ZNodeMulti
	if err := decodePayload(c, &m); err != nil {
		return s.invalid("%v", err)
	}
	if len(m.Ops) > MaxZNodeMultiOps {
		return s.invalid("znode multi: %d ops, more than %d", len(m.Ops), MaxZNodeMultiOps)
	}
	var (
		undo []znodeUndo
		evs  []ZNodeEvent
	)
	out := make([]ZNodeResult, 0, len(m.Ops))
	for i, op := range m.Ops {
		var (
			r   ZNodeResult
			err error
			set = btoi(op.Create != nil) + btoi(op.Delete != nil) + btoi(op.SetData != nil) + btoi(op.Check != nil)
		)
		switch {
		case set != 1:
			err = fmt.Errorf("%w: want exactly one of create, delete, set_data, check", ErrZNodeBadArguments)
		case op.Create != nil:
			r, err = s.zcreate(op.Create, &undo)
			evs = append(evs, ZNodeEvent{Type: ZNodeCreated, Path: r.Path})
		case op.Delete != nil:
			r, err = s.zdelete(op.Delete, &undo)
			evs = append(evs, ZNodeEvent{Type: ZNodeDeleted, Path: op.Delete.Path})
		case op.SetData != nil:
			r, err = s.zsetData(op.SetData, &undo)
			evs = append(evs, ZNodeEvent{Type: ZNodeDataChanged, Path: r.Path})
		default:
			r, err = s.zcheck(op.Check)
		}
		if err != nil {
			s.zrollback(undo)
			return Result{Revision: s.revision, Err: &ZNodeMultiError{Index: i, Err: err}}
		}
		out = append(out, r)
	}
	for i := range evs {
		evs[i].Zxid = int64(s.applied)
	}
	return Result{Revision: s.revision, Out: out, ZNodeEvents: evs}
}

func (s *State) applyZNodeCloseSession(c *Command) Result {
	var p ZNodeCloseSession
	if err := decodePayload(c, &p); err != nil {
		return s.invalid("%v", err)
	}
	if p.Session == 0 {
		return s.invalid("znode close session: session 0 owns no ephemerals")
	}
	res := Result{Revision: s.revision}
	paths, err := s.deleteEphemerals(p.Session, &res)
	if err != nil {
		return Result{Revision: s.revision, Err: err}
	}
	res.Out = paths
	return res
}

// deleteEphemerals deletes session's ephemeral znodes, reporting each in
// res.ZNodeEvents; a closed or expired session (a lease revoke) ends here.
func (s *State) deleteEphemerals(session int64, res *Result) ([]string, error) {
	paths := make([]string, 0, len(s.ext.ephemerals[session]))
	for path := range s.ext.ephemerals[session] {
		paths = append(paths, path)
	}
	// Sorted so every replica deletes (and reports) in the same order;
	// ephemerals have no children, so any order succeeds.
	sort.Strings(paths)
	for _, path := range paths {
		if _, err := s.zdelete(&ZNodeDelete{Path: path, Version: -1}, nil); err != nil {
			// Cannot happen: the index only holds childless existing
			// nodes. Report instead of panicking in apply.
			return nil, errors.Join(ErrInvalid, err)
		}
		res.ZNodeEvents = append(res.ZNodeEvents, ZNodeEvent{Type: ZNodeDeleted, Path: path, Zxid: int64(s.applied)})
	}
	return paths, nil
}

// cloneZData copies znode data, keeping null (nil) apart from empty: a
// ZooKeeper client reads back null for a node created with null data and
// an empty buffer for one created with empty data (kazoo's Counter, for
// one, cannot decode null).
func cloneZData(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
