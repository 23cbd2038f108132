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

// ZooKeeper shows a container's or a TTL node's kind in its
// ephemeralOwner (EphemeralType): containers as the minimum long, TTL
// nodes as 0xff in the top byte and the TTL below.
const (
	containerOwner = int64(-1 << 63)
	ttlOwnerMask   = int64(-1 << 56) // 0xff00000000000000
)

func toStat(st metadata.ZNodeStat, container bool, ttlMS int64) jute.Stat {
	owner := st.EphemeralOwner
	switch {
	case container:
		owner = containerOwner
	case ttlMS > 0:
		owner = ttlOwnerMask | ttlMS
	}
	return jute.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: owner,
		DataLength: st.DataLength, NumChildren: st.NumChildren, Pzxid: st.Pzxid}
}

func nodeStat(n metadata.ZNodeInfo) jute.Stat { return toStat(n.Stat, n.Container, n.TTLMS) }
