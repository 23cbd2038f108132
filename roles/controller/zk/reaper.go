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
// A pass reads only the container and TTL nodes (the state indexes
// them), not the whole tree.
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
	victims := s.b.State().ReapCandidates(s.b.Now().UnixMilli())
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
