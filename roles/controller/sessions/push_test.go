package sessions

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A pass visits only the sessions whose assignment moved or that were
// marked; with thousands of workers registering, visiting every session
// per registration made the ramp O(workers²) at the leader.
func TestPushCandidates_VisitsOnlyChangedAndMarkedSessions(t *testing.T) {
	m := &Manager{ready: true, sessions: map[string]*session{
		"a": {id: "a", sentVersion: 1}, "b": {id: "b", sentVersion: 2}, "c": {id: "c", sentVersion: 3},
	}}
	m.jobs.pushIDs = map[string]struct{}{}

	ids, sent, ready := m.pushCandidates(false, []string{"b", "gone", "b"})
	require.True(t, ready)
	require.Equal(t, []string{"b"}, ids, "changed workers without a session are skipped, repeats visited once")
	require.Equal(t, []uint64{2}, sent)

	m.pushSoonLocked("c")
	ids, _, _ = m.pushCandidates(false, nil)
	require.Equal(t, []string{"c"}, ids)
	ids, _, _ = m.pushCandidates(false, nil)
	require.Empty(t, ids, "a mark is consumed by the pass")

	ids, _, _ = m.pushCandidates(true, nil)
	require.ElementsMatch(t, []string{"a", "b", "c"}, ids)

	m.ready = false
	m.pushSoonLocked("a")
	_, _, ready = m.pushCandidates(false, []string{"a"})
	require.False(t, ready, "not leading: nothing to push, and the next leader looks at everyone")
	require.Empty(t, m.jobs.pushIDs)
}
