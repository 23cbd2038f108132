package metadata

import "strconv"

// Size accounting for the storage quota (docs/OPERATIONS.md, "Storage
// quota"). The state machine itself never refuses a write for size: each
// controller's --quota-bytes may differ, and Apply must give the same result
// on every replica, so the quota is checked by the proposing controller
// before it proposes (roles/controller/api/quota.go). The state only counts.

// itemBytes is what one key costs in the count: its key and value bytes.
func itemBytes(it item) int64 { return int64(len(it.key) + len(it.value)) }

// KVBytes is the sum of the lengths of every key and value. It is exact and
// deterministic: Apply keeps it, and restoring a snapshot recounts it.
func (s *State) KVBytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.kvBytes
}

// Bytes estimates the size of the replicated state: KVBytes plus the ext
// state (jobs, allocations, workers, leases...). The ext part is the size of
// its encoding at the last snapshot or restore, plus the job specs
// registered since; it is refreshed (and can only then shrink) by the next
// snapshot, like etcd's database size until compaction and defrag.
func (s *State) Bytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.kvBytes + s.extBytes
}

// Minimum resources every task is scheduled with: a spec asking for less
// (zero included) is placed as if it asked for these, so tasks that declare
// nothing cannot pile without bound onto one worker. The spec itself is
// kept as submitted.
const (
	MinTaskCPUMillis = 10
	MinTaskMemoryMB  = 4
)

// Effective is r raised to the minimum task resources: what the scheduler
// counts a task as using.
func (r Resources) Effective() Resources {
	return Resources{CPUMillis: max(r.CPUMillis, MinTaskCPUMillis), MemoryMB: max(r.MemoryMB, MinTaskMemoryMB)}
}

// MaxAllocsLabel is the worker label carrying the most non-terminal
// allocations the worker accepts (the worker's --max-allocs). Labels are
// already part of the worker protocol's Register message, so older
// controllers ignore it and older workers simply do not send it.
const MaxAllocsLabel = "corral.max_allocs"

// DefaultMaxAllocs is the limit for a worker that does not report one (an
// older worker, or a bad label value).
const DefaultMaxAllocs = 100

// MaxAllocs is the most non-terminal allocations the scheduler places on w.
func (w *Worker) MaxAllocs() int {
	if v, err := strconv.Atoi(w.Labels[MaxAllocsLabel]); err == nil && v > 0 {
		return v
	}
	return DefaultMaxAllocs
}
