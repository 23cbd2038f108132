package metadata

import (
	"fmt"
	"sort"
)

// Member is a controller of the quorum as the replicated state knows it.
// Whether it votes is raft's ConfState; the state machine keeps what raft
// does not: where to reach it.
type Member struct {
	ID uint64 `json:"id"`
	// Address is the QUIC address other controllers and workers dial.
	Address string `json:"address"`
	// HTTPAddress is the API address the member announced ("" until then).
	HTTPAddress string `json:"http_address,omitempty"`
}

// MemberOp is what a raft configuration change did to a member.
type MemberOp int

// Member operations; they mirror raft's conf change types.
const (
	MemberAdd MemberOp = iota + 1
	MemberRemove
	// MemberUpdate records nothing (raft's UpdateNode carries no member
	// data corral keeps); only the applied index advances.
	MemberUpdate
)

// ApplyMemberChange records a committed raft configuration change at index
// (the controller calls it when it applies the conf change entry). It
// advances the applied index like Apply. A removed id stays reserved so it
// is never given to another controller.
func (s *State) ApplyMemberChange(index uint64, op MemberOp, m Member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.applied {
		return fmt.Errorf("apply member change at %d: %w (applied index is %d)", index, ErrAlreadyApplied, s.applied)
	}
	s.applied = index
	switch op {
	case MemberAdd:
		if s.ext.Members == nil {
			s.ext.Members = map[uint64]*Member{}
		}
		prev := s.ext.Members[m.ID]
		if m.Address == "" && prev != nil {
			m.Address = prev.Address // a promotion carries no address
		}
		if m.HTTPAddress == "" && prev != nil {
			m.HTTPAddress = prev.HTTPAddress
		}
		s.ext.Members[m.ID] = &m
	case MemberRemove:
		delete(s.ext.Members, m.ID)
		s.ext.RemovedIDs = appendUnique(s.ext.RemovedIDs, m.ID)
	case MemberUpdate:
	default:
		return fmt.Errorf("apply member change at %d: %w: op %d", index, ErrInvalid, op)
	}
	return nil
}

func appendUnique(ids []uint64, id uint64) []uint64 {
	for _, x := range ids {
		if x == id {
			return ids
		}
	}
	ids = append(ids, id)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Members returns the known controllers ordered by id.
func (s *State) Members() []Member {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Member, 0, len(s.ext.Members))
	for _, m := range s.ext.Members {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Member returns one controller.
func (s *State) Member(id uint64) (Member, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.ext.Members[id]
	if !ok {
		return Member{}, false
	}
	return *m, true
}

// WasRemoved reports whether id belonged to a controller that was removed;
// raft ids must never be reused.
func (s *State) WasRemoved(id uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, x := range s.ext.RemovedIDs {
		if x == id {
			return true
		}
	}
	return false
}

// applySetMemberHTTP records the HTTP address a controller announced. The
// member must exist; anything else is refused without a change.
func (s *State) applySetMemberHTTP(c *Command) Result {
	var id uint64
	if _, err := fmt.Sscanf(c.Key, "%d", &id); err != nil || id == 0 {
		return s.invalid("set member http: bad member id %q", c.Key)
	}
	m, ok := s.ext.Members[id]
	if !ok {
		return s.invalid("set member http: controller %d is not a member", id)
	}
	m.HTTPAddress = string(c.Value)
	return Result{Revision: s.revision}
}

// ResetForNewCluster rewrites the membership to members and forgets the
// cluster id, for an offline restore or disaster recovery. It must never be
// called on a running controller's state.
func (s *State) ResetForNewCluster(members []Member, keepClusterID bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ext.Members = map[uint64]*Member{}
	for _, m := range members {
		m := m
		s.ext.Members[m.ID] = &m
	}
	if !keepClusterID {
		s.clusterID = ""
	}
}
