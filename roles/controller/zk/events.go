package zk

import (
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
	"github.com/corral-dev/corral/roles/controller/zk/watch"
)

// Applied fires the watches of the znode changes of one applied entry.
// The controller calls it from its raft loop for every applied entry,
// after the state holds the entry; it never blocks.
func (s *Server) Applied(evs []metadata.ZNodeEvent) {
	if len(evs) == 0 {
		return
	}
	var top int64
	for _, ev := range evs {
		top = max(top, ev.Zxid)
		if ds := s.watches.Trigger(ev); len(ds) > 0 {
			s.deliver(ds)
		}
	}
	s.markFired(top)
	s.met.watches.Set(float64(s.watches.Count()))
}

// Reset is called after the state was replaced by a snapshot: the
// changes it skipped fired no watch, so every connection is closed. Its
// client reconnects (here or elsewhere) and re-arms its watches with
// setWatches, which fires those whose node changed since it last looked,
// as ZooKeeper does after a reconnect.
func (s *Server) Reset() {
	s.mu.RLock()
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.RUnlock()
	// Closing joins nothing, so it is safe from the raft loop.
	for _, c := range conns {
		go c.close("state replaced by a snapshot")
	}
	s.markFired(int64(s.b.AppliedIndex()))
	s.log.Info("zk: state reset, connections closed", "connections", len(conns))
}

// deliver queues watch events to their connections. A node's own event
// may come from a recursive watch on an ancestor, so it goes only to a
// session that may read the node: a persistent recursive watch must not
// leak the names of descendants it cannot read (ZooKeeper's fix for
// CVE-2024-23944). Deletions (the node is gone) and NodeChildrenChanged
// (sent to watchers of the parent itself, who could read it when they
// set the watch) are not checked. The check applies to every watch, as a
// Delivery does not say which watch matched: an exists watch on a node
// the session cannot read hears of its deletion but not of its creation
// or data changes, where ZooKeeper would tell. Each node's ACL is read
// once per call, however many watchers it has.
func (s *Server) deliver(ds []watch.Delivery) {
	type acl struct {
		list   []metadata.ZNodeACL
		exists bool
	}
	var acls map[string]acl
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, d := range ds {
		c := s.conns[d.Conn]
		if c == nil {
			continue
		}
		if d.Type != watch.EventNodeChildrenChanged && d.Type != watch.EventNodeDeleted {
			a, ok := acls[d.Path]
			if !ok {
				n, exists := s.lookup(d.Path)
				a = acl{list: n.ACL, exists: exists}
				if acls == nil {
					acls = map[string]acl{}
				}
				acls[d.Path] = a
			}
			if a.exists && !checkACL(a.list, jute.PermRead, c.authIDs()) {
				continue
			}
		}
		c.sendEvent(jute.EventType(d.Type), d.Path)
	}
}

func (s *Server) markFired(zxid int64) {
	s.firedMu.Lock()
	if zxid > s.fired.Load() {
		s.fired.Store(zxid)
		s.firedCond.Broadcast()
	}
	s.firedMu.Unlock()
}

// waitFired waits (at most a second) until Applied has queued the watch
// events of zxid. The state holds an entry a moment before Applied runs
// for it; a read in that moment must not overtake the entry's events.
func (s *Server) waitFired(zxid int64) {
	if s.fired.Load() >= zxid {
		return
	}
	s.firedMu.Lock()
	defer s.firedMu.Unlock()
	deadline := time.Now().Add(time.Second)
	t := time.AfterFunc(time.Second, func() {
		s.firedMu.Lock()
		s.firedCond.Broadcast()
		s.firedMu.Unlock()
	})
	defer t.Stop()
	for s.fired.Load() < zxid && time.Now().Before(deadline) {
		select {
		case <-s.quit:
			return
		default:
		}
		s.firedCond.Wait()
	}
}
