package metadata

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func reapPaths(s *State, nowMS int64) []string {
	var out []string
	for _, n := range s.ReapCandidates(nowMS) {
		out = append(out, n.Path)
	}
	return out
}

// TestReapCandidates: the reaper's index holds exactly the container and
// TTL nodes through creates, deletes, a refused multi and a restore, and
// the candidates are the ones ZooKeeper's ContainerManager deletes.
func TestReapCandidates(t *testing.T) {
	a := newApplier(t)
	container := func(c *ZNodeCreate) { c.Container = true }
	ttl := func(c *ZNodeCreate) { c.TTLMS = 500 }
	require.NoError(t, zcreate(t, a, "/used", container).Err)
	require.NoError(t, zcreate(t, a, "/fresh", container).Err)
	require.NoError(t, zcreate(t, a, "/used/k", nil).Err)
	require.NoError(t, zcreate(t, a, "/ttl", ttl).Err)    // mtime 1003
	require.NoError(t, zcreate(t, a, "/ttlp", ttl).Err)   // mtime 1004
	require.NoError(t, zcreate(t, a, "/ttlp/k", nil).Err) // keeps /ttlp
	require.NoError(t, zcreate(t, a, "/plain", nil).Err)  // never a candidate
	require.Len(t, a.s.ext.reapable, 4)
	require.Empty(t, reapPaths(a.s, 1503))
	require.Equal(t, []string{"/ttl"}, reapPaths(a.s, 1504))

	require.NoError(t, a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/used/k", Version: -1})).Err)
	got := a.s.ReapCandidates(1504)
	require.Len(t, got, 2)
	require.Equal(t, "/ttl", got[0].Path)
	require.Equal(t, "/used", got[1].Path)
	require.Equal(t, int32(1), got[1].Stat.Cversion)
	require.True(t, got[1].Container)

	// A refused multi leaves the index as it was.
	res := a.apply(zcmd(t, OpZNodeMulti, ZNodeMulti{Ops: []ZNodeOp{
		{Create: &ZNodeCreate{Path: "/c2", ACL: worldAll, Container: true}},
		{Delete: &ZNodeDelete{Path: "/ttl", Version: -1}},
		{Check: &ZNodeCheck{Path: "/plain", Version: 7}},
	}}))
	require.ErrorIs(t, res.Err, ErrZNodeBadVersion)
	require.Len(t, a.s.ext.reapable, 4)
	requireZConsistent(t, a.s)

	// A restored state rebuilds it.
	r, err := Restore(mustSnapshot(t, a.s))
	require.NoError(t, err)
	require.Equal(t, reapPaths(a.s, 1505), reapPaths(r, 1505))

	// Deletes take nodes out.
	require.NoError(t, a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/ttl", Version: -1})).Err)
	require.NoError(t, a.apply(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: "/used", Version: -1})).Err)
	require.Len(t, a.s.ext.reapable, 2)
	require.Empty(t, reapPaths(a.s, 1<<40))
	requireZConsistent(t, a.s)
}
