package zk

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/metadata"
)

// A resume commits a bind of its session to the new connection
// (resumeSession). After a controller dies, every session it served
// resumes elsewhere at once; one entry per resume made 2,000 resumes
// take 0.5-1.9 s at p99 where a ReadIndex each took 0.4-0.5 s
// (docs/PERFORMANCE.md). The binder puts the binds that wait while one
// entry is in flight into the next one, as a group commit does.

const (
	// maxQueuedBinds bounds the resumes waiting for their bind; past it a
	// resume is refused and its client tries another controller.
	maxQueuedBinds = 10000
	// maxBindsPerEntry keeps an entry of binds near 100 KiB, well inside
	// raft's 1 MiB per message.
	maxBindsPerEntry = 1000
)

// An entry of more binds than metadata.MaxZNodeBinds is refused whole at
// apply: this fails to compile if maxBindsPerEntry ever exceeds it.
var _ [metadata.MaxZNodeBinds - maxBindsPerEntry]struct{}

// bindReq is one resume waiting for its bind.
type bindReq struct {
	bind metadata.ZNodeBind
	done chan bindAns // buffered: the binder never waits on a resume
}

// bindAns is a bind's outcome: err when the entry did not commit (the
// session is intact), else whether the session was bound.
type bindAns struct {
	bound bool
	err   error
}

var errBindQueueFull = errors.New("too many resumes waiting for their bind")

// bindSession commits b (its session bound to this connection) through
// the binder and reports whether the session was bound (false: expired,
// or not its password).
func (c *conn) bindSession(ctx context.Context, b metadata.ZNodeBind) (bool, error) {
	req := bindReq{bind: b, done: make(chan bindAns, 1)}
	select {
	case c.srv.binds <- req:
	default:
		return false, errBindQueueFull
	}
	select {
	case a := <-req.done:
		return a.bound, a.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// bindLoop proposes the waiting binds, all of them in one entry, one
// entry at a time.
func (s *Server) bindLoop() {
	defer s.wg.Done()
	for {
		var batch []bindReq
		select {
		case <-s.quit:
			return
		case r := <-s.binds:
			batch = append(batch, r)
		}
	more:
		for len(batch) < maxBindsPerEntry {
			select {
			case r := <-s.binds:
				batch = append(batch, r)
			default:
				break more
			}
		}
		s.proposeBinds(batch)
	}
}

func (s *Server) proposeBinds(batch []bindReq) {
	p := metadata.ZNodeBinds{Binds: make([]metadata.ZNodeBind, len(batch))}
	for i, r := range batch {
		p.Binds[i] = r.bind
	}
	ctx, cancel := s.timeoutCtx(catchUpWait)
	res, err := s.proposePayload(ctx, metadata.OpZNodeBindSession, p)
	cancel()
	bound, ok := res.Out.([]bool)
	switch {
	case err == nil && res.Err != nil:
		err = res.Err
	case err == nil && (!ok || len(bound) != len(batch)):
		err = fmt.Errorf("bind sessions: unexpected result %T", res.Out)
	}
	for i, r := range batch {
		if err != nil {
			r.done <- bindAns{err: err}
			continue
		}
		r.done <- bindAns{bound: bound[i]}
	}
}
