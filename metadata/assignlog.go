package metadata

import "slices"

// assignLogMax is how many assignment changes are remembered for
// AssignChangesSince: far more than commit between two pusher passes.
const assignLogMax = 4096

// assignLog remembers which worker each of the latest assignment versions
// went to, in order, so that the leader's pusher visits only the workers
// whose assignment moved instead of every session (every registration
// moves one: with thousands of workers arriving, a full visit per pass was
// the leader's largest cost of its own). It is derived, never serialised
// and not replicated: after a restore it is empty and the pusher looks at
// everyone once.
type assignLog struct {
	first uint64   // the AssignSeq given to ids[0]
	ids   []string // ids[i] was given AssignSeq first+i
}

func (l *assignLog) add(seq uint64, id string) {
	if len(l.ids) == 0 || seq != l.first+uint64(len(l.ids)) {
		l.first, l.ids = seq, l.ids[:0]
	}
	l.ids = append(l.ids, id)
	if len(l.ids) >= 2*assignLogMax {
		n := len(l.ids) - assignLogMax
		l.ids = append([]string(nil), l.ids[n:]...)
		l.first += uint64(n)
	}
}

// AssignChangesSince returns the workers whose assignment version moved
// after seq (a worker may appear more than once) and the current
// AssignSeq. known is false when those changes are no longer remembered
// (too many, or the state was restored from a snapshot since): the caller
// must then look at every worker.
func (s *State) AssignChangesSince(seq uint64) (ids []string, cur uint64, known bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	cur = s.ext.AssignSeq
	l := &s.ext.assigns
	switch {
	case seq == cur:
		return nil, cur, true
	case seq > cur, len(l.ids) == 0, seq+1 < l.first, l.first+uint64(len(l.ids))-1 != cur:
		return nil, cur, false
	}
	return slices.Clone(l.ids[seq+1-l.first:]), cur, true
}
