package metadata

import "sort"

// reapable reports whether the leader's reaper may ever delete n: a
// container or a TTL node. Both kinds are fixed at create.
func (n *ZNode) reapable() bool { return n.Container || n.TTLMS > 0 }

func (e *extState) addReapable(p string) {
	if e.reapable == nil {
		e.reapable = map[string]struct{}{}
	}
	e.reapable[p] = struct{}{}
}

// ReapCandidates returns, sorted by path and without data or ACL, the
// znodes ZooKeeper's ContainerManager would delete at nowMS: containers
// that have had a child and have none left, and childless TTL nodes not
// modified for their TTL. It reads only the container and TTL nodes; the
// walk of the whole tree it replaced cost the leader a quarter of a
// second of CPU at 157,000 znodes, and a copy of every leaf.
func (s *State) ReapCandidates(nowMS int64) []ZNodeInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []ZNodeInfo
	for p := range s.ext.reapable {
		n := s.ext.ZNodes.get(p)
		if n == nil || s.ext.zkids[p].len() > 0 {
			continue
		}
		if (n.Container && n.Cversion > 0) || (n.TTLMS > 0 && n.Mtime+n.TTLMS < nowMS) {
			out = append(out, ZNodeInfo{Path: p, TTLMS: n.TTLMS, Container: n.Container, Stat: n.stat(0)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
