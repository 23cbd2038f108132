package raftlog

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenLockedStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	defer s.Close()
	_, err = Open(Options{Dir: dir})
	require.ErrorIs(t, err, ErrLocked)
	require.EqualError(t, err, "open raft log "+dir+": in use by another process")
	require.False(t, errors.Is(err, ErrCorrupt))
}
