package raftlog

import (
	"errors"
	"fmt"
)

// Node metadata ("cluster_id", "node_id", ...) lives beside the raft state in
// the same database so that it can never be paired with another node's log
// by a mix-up of directories. Values are CRC-checked records like the rest.

// GetMeta returns the metadata value stored under key, ok=false if unset.
func (s *Store) GetMeta(key string) (string, bool, error) {
	if key == "" {
		return "", false, errors.New("get raft log metadata: empty key")
	}
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usableLocked(); err != nil {
		return "", false, err
	}
	v, ok, err := s.get(metaKey(key))
	if err != nil {
		return "", false, fmt.Errorf("get raft log metadata %q: %w", key, err)
	}
	return string(v), ok, nil
}

// SetMeta stores value under key, synced.
func (s *Store) SetMeta(key, value string) error {
	if key == "" {
		return errors.New("set raft log metadata: empty key")
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	k := metaKey(key)
	if err := b.Set(k, encodeRecord(k, []byte(value)), nil); err != nil {
		return fmt.Errorf("set raft log metadata %q: %w", key, err)
	}
	if err := s.commit(b, true, func() {}); err != nil {
		return fmt.Errorf("set raft log metadata %q: %w", key, err)
	}
	return nil
}
