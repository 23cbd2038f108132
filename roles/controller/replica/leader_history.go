package replica

import (
	"sync"
	"time"
)

// LeaderChange is one change of leader as this controller saw it.
type LeaderChange struct {
	AtMS int64  `json:"at_ms"`
	From uint64 `json:"from"` // the previous leader (0: none known yet)
	To   uint64 `json:"to"`
	Term uint64 `json:"term"`
}

// leaderHistory keeps the leader changes of the last hour, for the
// dashboard: a page opened now still shows what happened before it.
type leaderHistory struct {
	mu      sync.Mutex
	last    uint64
	changes []LeaderChange
}

const (
	leaderHistoryWindow = time.Hour
	leaderHistoryMax    = 1000
)

// observe records a newly known leader; a leaderless moment is not a change.
func (h *leaderHistory) observe(now time.Time, lead, term uint64) {
	if lead == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if lead == h.last {
		return
	}
	h.changes = append(h.changes, LeaderChange{AtMS: now.UnixMilli(), From: h.last, To: lead, Term: term})
	h.last = lead
	h.prune(now)
}

func (h *leaderHistory) prune(now time.Time) {
	cut := now.Add(-leaderHistoryWindow).UnixMilli()
	i := 0
	for i < len(h.changes) && (h.changes[i].AtMS < cut || len(h.changes)-i > leaderHistoryMax) {
		i++
	}
	h.changes = append([]LeaderChange(nil), h.changes[i:]...)
}

// lastHour returns the changes of the last hour, oldest first.
func (h *leaderHistory) lastHour(now time.Time) []LeaderChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.prune(now)
	return append([]LeaderChange{}, h.changes...)
}
