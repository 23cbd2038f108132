package transport

import (
	"sync"

	"go.etcd.io/raft/v3"
)

type snapReport struct {
	id     uint64
	status raft.SnapshotStatus
}

// reporter delivers ReportUnreachable/ReportSnapshot to the Handler from its
// own goroutine. Send must never block and must never call into the Handler
// re-entrantly (the Handler may forward to the very goroutine calling Send),
// so reports are queued here. Unreachable reports are coalesced per peer
// (raft only needs to know "at least once since last time"); snapshot
// reports are all kept, in order, because each one unpauses raft's progress.
type reporter struct {
	mu          sync.Mutex
	unreachable map[uint64]struct{}
	order       []uint64 // first-report order of unreachable ids
	snaps       []snapReport
	wake        chan struct{}
}

func newReporter() *reporter {
	return &reporter{unreachable: map[uint64]struct{}{}, wake: make(chan struct{}, 1)}
}

func (r *reporter) reportUnreachable(id uint64) {
	r.mu.Lock()
	if _, ok := r.unreachable[id]; !ok {
		r.unreachable[id] = struct{}{}
		r.order = append(r.order, id)
	}
	r.mu.Unlock()
	r.signal()
}

func (r *reporter) reportSnapshot(id uint64, s raft.SnapshotStatus) {
	r.mu.Lock()
	r.snaps = append(r.snaps, snapReport{id, s})
	r.mu.Unlock()
	r.signal()
}

func (r *reporter) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run delivers reports to h until stop is closed.
func (r *reporter) run(h Handler, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-r.wake:
		}
		r.mu.Lock()
		ids, snaps := r.order, r.snaps
		r.order, r.snaps = nil, nil
		clear(r.unreachable)
		r.mu.Unlock()
		for _, id := range ids {
			h.ReportUnreachable(id)
		}
		for _, s := range snaps {
			h.ReportSnapshot(s.id, s.status)
		}
	}
}
