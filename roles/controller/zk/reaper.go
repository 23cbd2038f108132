package zk

import (
	"errors"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// reapLoop is ZooKeeper's ContainerManager: on the leader only, it
// deletes containers that had children and have none left, and TTL nodes
// without children not modified for their TTL. Each delete names the
// version it saw, so a node changed meanwhile survives.
//
// A pass walks the whole tree from the root, as the state keeps no index
// of containers and TTL nodes: that costs the leader about a second of
// CPU per million znodes, hence ZooKeeper's 60s default interval.
func (s *Server) reapLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ContainerCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		if s.b.IsLeader() {
			s.reapOnce()
		}
		s.reapTicks.Add(1)
	}
}

// reapOnce runs one pass and returns the paths it deleted.
func (s *Server) reapOnce() []string {
	st := s.b.State()
	now := s.b.Now().UnixMilli()
	var victims []metadata.ZNodeInfo
	stack := []string{"/"}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		kids, _ := st.Children(p)
		for _, k := range kids {
			if p == "/" {
				stack = append(stack, "/"+k)
			} else {
				stack = append(stack, p+"/"+k)
			}
		}
		if len(kids) > 0 || p == "/" {
			continue
		}
		n, ok := st.ZNode(p)
		if !ok {
			continue
		}
		switch {
		case n.Container && n.Stat.Cversion > 0:
			victims = append(victims, n)
		case n.TTLMS > 0 && n.Stat.Mtime+n.TTLMS < now:
			victims = append(victims, n)
		}
	}
	var deleted []string
	for _, n := range victims {
		ctx, cancel := s.timeoutCtx(s.cfg.ProposeTimeout)
		res, err := s.proposePayload(ctx, metadata.OpZNodeDelete, metadata.ZNodeDelete{Path: n.Path, Version: n.Stat.Version})
		cancel()
		switch {
		case err != nil:
			s.log.Warn("zk: reaper delete failed", "path", n.Path, "err", err)
			return deleted
		case res.Err == nil:
			deleted = append(deleted, n.Path)
			s.log.Info("zk: reaped", "path", n.Path, "container", n.Container, "ttl_ms", n.TTLMS)
		case errors.Is(res.Err, metadata.ErrZNodeNoNode), errors.Is(res.Err, metadata.ErrZNodeNotEmpty), errors.Is(res.Err, metadata.ErrZNodeBadVersion):
			// Someone got there first or used it again: fine.
		default:
			s.log.Warn("zk: reaper delete refused", "path", n.Path, "err", res.Err)
		}
	}
	return deleted
}
