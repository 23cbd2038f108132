package metadata

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAssignChangesSince_NamesTheWorkersWhoseAssignmentMoved(t *testing.T) {
	a := newApplier(t)
	ids, cur, known := a.s.AssignChangesSince(0)
	require.True(t, known)
	require.Zero(t, cur)
	require.Empty(t, ids)

	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	require.NoError(t, a.apply(registerCmd(t, "w2", 1, 3)).Err)
	ids, cur, known = a.s.AssignChangesSince(0)
	require.True(t, known)
	require.Equal(t, []string{"w1", "w2"}, ids)
	require.Equal(t, uint64(2), cur, "one version per registration")

	require.NoError(t, a.apply(jobCmd(t, "j", 1, false)).Err)
	a.apply(planCmd(t, 3, planFor(a, "j", NewAlloc{ID: "a1", Worker: "w2", WorkerEpoch: 1})))
	ids, next, known := a.s.AssignChangesSince(cur)
	require.True(t, known)
	require.Equal(t, []string{"w2"}, ids, "a plan moves only the assignment of the worker it places on")
	ids, _, known = a.s.AssignChangesSince(next)
	require.True(t, known)
	require.Empty(t, ids)

	_, _, known = a.s.AssignChangesSince(next + 1)
	require.False(t, known, "a version from the future is not known")
}

func TestAssignChangesSince_ForgetsOldChangesAndRestores(t *testing.T) {
	a := newApplier(t)
	n := 2*assignLogMax + 10
	for i := range n {
		require.NoError(t, a.apply(registerCmd(t, fmt.Sprintf("w%d", i), 1, 3)).Err)
	}
	_, cur, known := a.s.AssignChangesSince(0)
	require.False(t, known, "changes older than the log must ask for a full look")
	ids, _, known := a.s.AssignChangesSince(cur - 3)
	require.True(t, known)
	require.Equal(t, []string{fmt.Sprintf("w%d", n-3), fmt.Sprintf("w%d", n-2), fmt.Sprintf("w%d", n-1)}, ids)

	// A restored state knows its version but not which workers got the
	// last ones: the pusher must look at everyone once.
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	ra := &applier{t: t, s: New(), index: a.index}
	r := ra.s
	require.NoError(t, r.RestoreFrom(snap))
	_, rcur, known := r.AssignChangesSince(cur - 3)
	require.Equal(t, cur, rcur)
	require.False(t, known)
	ids, _, known = r.AssignChangesSince(cur)
	require.True(t, known)
	require.Empty(t, ids)
	require.NoError(t, ra.apply(registerCmd(t, "w0", 2, 3)).Err)
	ids, _, known = r.AssignChangesSince(cur)
	require.True(t, known)
	require.Equal(t, []string{"w0"}, ids)
}
