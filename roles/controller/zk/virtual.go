package zk

import (
	"sort"
	"strings"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// ZooKeeper clients expect /zookeeper, /zookeeper/quota and
// /zookeeper/config to exist (zkCli lists them, Curator skips them). The
// server makes them up rather than storing them: they are empty, with a
// zero Stat, world-readable; creating one is NodeExists and any other
// write at or under /zookeeper is BadArguments. Quotas and dynamic
// reconfiguration are not supported, so there is nothing to put there.
const zkRoot = "/zookeeper"

var virtualKids = map[string][]string{
	"/zookeeper":        {"config", "quota"},
	"/zookeeper/quota":  nil,
	"/zookeeper/config": nil,
}

// underZK reports whether p is /zookeeper or below it.
func underZK(p string) bool { return p == zkRoot || strings.HasPrefix(p, zkRoot+"/") }

func virtualNode(p string) (metadata.ZNodeInfo, bool) {
	kids, ok := virtualKids[p]
	if !ok {
		return metadata.ZNodeInfo{}, false
	}
	perms := jute.PermAll
	if p == "/zookeeper/config" {
		perms = jute.PermRead
	}
	return metadata.ZNodeInfo{Path: p, ACL: []metadata.ZNodeACL{{Scheme: "world", ID: "anyone", Perms: perms}},
		Stat: metadata.ZNodeStat{NumChildren: int32(len(kids))}}, true
}

// lookup returns the node at p as clients see it: the state's, or a
// virtual one, with the root counting /zookeeper among its children.
func (s *Server) lookup(p string) (metadata.ZNodeInfo, bool) {
	if underZK(p) {
		return virtualNode(p)
	}
	n, ok := s.b.State().ZNode(p)
	if ok && p == "/" {
		n.Stat.NumChildren++
	}
	return n, ok
}

// acl returns the ACL of the node at p as clients see it, without
// copying its data (State.ZNodeACL: the slice must not be written to).
func (s *Server) acl(p string) ([]metadata.ZNodeACL, bool) {
	if underZK(p) {
		n, ok := virtualNode(p)
		return n.ACL, ok
	}
	return s.b.State().ZNodeACL(p)
}

// children returns the child names of p as clients see them.
func (s *Server) children(p string) ([]string, bool) {
	if underZK(p) {
		kids, ok := virtualKids[p]
		return append([]string{}, kids...), ok
	}
	kids, ok := s.b.State().Children(p)
	if ok && p == "/" {
		i := sort.SearchStrings(kids, "zookeeper")
		if i == len(kids) || kids[i] != "zookeeper" {
			kids = append(kids[:i], append([]string{"zookeeper"}, kids[i:]...)...)
		}
	}
	if kids == nil && ok {
		kids = []string{}
	}
	return kids, ok
}

// allChildrenNumber is getAllChildrenNumber with the virtual nodes.
func (s *Server) allChildrenNumber(p string) int {
	switch {
	case p == zkRoot:
		return 2
	case underZK(p):
		if _, ok := virtualKids[p]; ok {
			return 0
		}
		return -1
	}
	n := s.b.State().AllChildrenNumber(p)
	if p == "/" && n >= 0 {
		n += 3
	}
	return n
}

// virtualWrite answers a write at or under /zookeeper.
func virtualWrite(p string, create bool) error {
	if _, ok := virtualKids[p]; ok && create {
		return jute.CodeNodeExists
	}
	return jute.CodeBadArguments
}

// toStat is a znode's Stat as clients see it. Container and TTL nodes
// show ephemeralOwner 0, as ZooKeeper's DataTree.copyStat does
// (getClientEphemeralOwner): their kind is kept server-side only, and a
// client that tests ephemeralOwner != 0 to find ephemeral nodes must not
// take them for ephemerals (checked against a real ZooKeeper 3.8 by
// cli/zk_test.go).
func toStat(st metadata.ZNodeStat) jute.Stat {
	return jute.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner,
		DataLength: st.DataLength, NumChildren: st.NumChildren, Pzxid: st.Pzxid}
}

func nodeStat(n metadata.ZNodeInfo) jute.Stat { return toStat(n.Stat) }
