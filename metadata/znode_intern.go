package metadata

import "slices"

// A stored znode's ACL used to be a slice of its own, with two strings per
// entry: two of the five heap objects a znode took (measured: 5.07 per
// znode, 3.07 with shared ACLs; its struct, data and path are the rest).
// Go's collector marks every live object at
// every cycle, and with 190,000 znodes the leader spent a fifth of its CPU
// marking under 128 writing clients. Nearly every znode carries one of a
// few ACLs (ZooKeeper's OPEN_ACL_UNSAFE, which Curator, kazoo and Kafka
// create with by default; a user's digest ACL on all of that user's
// nodes), so stored ACLs are shared, as ZooKeeper's own ACL cache shares
// them by reference. That is safe because stored ACLs, like the nodes, are
// never changed in place: setACL stores a new slice.

// worldACLs are the world:anyone ACLs, one per permission set; each is a
// full slice (len == cap), so an append by a reader copies it.
var worldACLs = func() (out [32][]ZNodeACL) {
	for p := range out {
		out[p] = []ZNodeACL{{Scheme: "world", ID: "anyone", Perms: int32(p)}}
	}
	return out
}()

// maxInternedACLs bounds the state's table of other shared ACLs; past it
// new ACLs are stored as copies of their own.
const maxInternedACLs = 4096

// worldACL returns the shared world:anyone ACL with perms, if that is
// what acl is.
func worldACL(acl []ZNodeACL) ([]ZNodeACL, bool) {
	if len(acl) != 1 || acl[0].Scheme != "world" || acl[0].ID != "anyone" || acl[0].Perms&^31 != 0 {
		return nil, false
	}
	return worldACLs[acl[0].Perms], true
}

// internACL returns a slice equal to acl that is safe to store and may be
// shared with other znodes: a world ACL, an ACL stored before, or a copy
// (nil for an empty acl, as before).
func (e *extState) internACL(acl []ZNodeACL) []ZNodeACL {
	if w, ok := worldACL(acl); ok {
		return w
	}
	if len(acl) == 0 {
		return nil
	}
	var buf [256]byte
	key := appendZNodeACL(buf[:0], acl)
	if shared, ok := e.acls[string(key)]; ok {
		return shared
	}
	own := slices.Clip(slices.Clone(acl))
	if len(e.acls) < maxInternedACLs {
		if e.acls == nil {
			e.acls = map[string][]ZNodeACL{}
		}
		e.acls[string(key)] = own
	}
	return own
}
