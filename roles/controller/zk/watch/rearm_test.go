package watch

import (
	"fmt"
	"testing"

	"github.com/corral-dev/corral/metadata"
	"github.com/stretchr/testify/require"
)

// tree is a lookup over a fixed set of stats.
func tree(nodes map[string]metadata.ZNodeStat) func(string) (metadata.ZNodeStat, bool) {
	return func(p string) (metadata.ZNodeStat, bool) {
		st, ok := nodes[p]
		return st, ok
	}
}

// TestRearm is the table of DataTree.setWatches: relZxid is 10; "/old"
// has not changed since, "/new" has new data and "/kids" new children.
func TestRearm(t *testing.T) {
	nodes := tree(map[string]metadata.ZNodeStat{
		"/old":  {Mzxid: 10, Pzxid: 10},
		"/new":  {Mzxid: 11, Pzxid: 5},
		"/kids": {Mzxid: 3, Pzxid: 12},
	})
	for _, tc := range []struct {
		name  string
		w     SetWatches
		want  []Delivery
		armed []w
	}{
		{"data unchanged is armed", SetWatches{Data: []string{"/old"}}, nil, []w{{1, "/old", Data}}},
		{"data missing fires deleted", SetWatches{Data: []string{"/gone"}}, []Delivery{{1, EventNodeDeleted, "/gone"}}, nil},
		{"data newer fires changed", SetWatches{Data: []string{"/new"}}, []Delivery{{1, EventNodeDataChanged, "/new"}}, nil},
		{"data: newer children do not count", SetWatches{Data: []string{"/kids"}}, nil, []w{{1, "/kids", Data}}},
		{"exists on a missing node is armed", SetWatches{Exist: []string{"/gone"}}, nil, []w{{1, "/gone", Exist}}},
		{"exists on an existing node fires created", SetWatches{Exist: []string{"/old"}}, []Delivery{{1, EventNodeCreated, "/old"}}, nil},
		{"child unchanged is armed", SetWatches{Child: []string{"/old"}}, nil, []w{{1, "/old", Child}}},
		{"child: newer data does not count", SetWatches{Child: []string{"/new"}}, nil, []w{{1, "/new", Child}}},
		{"child missing fires deleted", SetWatches{Child: []string{"/gone"}}, []Delivery{{1, EventNodeDeleted, "/gone"}}, nil},
		{"child newer fires children changed", SetWatches{Child: []string{"/kids"}}, []Delivery{{1, EventNodeChildrenChanged, "/kids"}}, nil},
		{"persistent always armed", SetWatches{Persistent: []string{"/gone", "/new"}, PersistentRecursive: []string{"/kids", "/"}},
			nil, []w{{1, "/gone", Persistent}, {1, "/new", Persistent}, {1, "/kids", PersistentRecursive}, {1, "/", PersistentRecursive}}},
		{"one deleted for data and child on a missing node", SetWatches{Data: []string{"/gone", "/gone"}, Child: []string{"/gone"}},
			[]Delivery{{1, EventNodeDeleted, "/gone"}}, nil},
		{"request order", SetWatches{Data: []string{"/new", "/gone"}, Exist: []string{"/old"}, Child: []string{"/kids"}},
			[]Delivery{{1, EventNodeDataChanged, "/new"}, {1, EventNodeDeleted, "/gone"}, {1, EventNodeCreated, "/old"}, {1, EventNodeChildrenChanged, "/kids"}}, nil},
		{"duplicates arm once", SetWatches{Data: []string{"/old", "/old"}}, nil, []w{{1, "/old", Data}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry(0)
			got, err := r.Rearm(1, 10, tc.w, nodes)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, len(tc.armed), r.Count())
			for _, x := range tc.armed {
				require.True(t, r.has(x), "%+v armed", x)
			}
			checkIndexes(t, r)
		})
	}
}

// has reports whether watch x is registered.
func (r *Registry) has(x w) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	cw := r.byConn[x.c]
	return cw != nil && cw.paths[x.p]&bit(x.k) != 0
}

// TestRearmThenTrigger: a re-armed watch fires like one set by a read.
func TestRearmThenTrigger(t *testing.T) {
	r := NewRegistry(0)
	_, err := r.Rearm(1, 10, SetWatches{Data: []string{"/a"}, Exist: []string{"/b"}, Child: []string{"/a"}},
		tree(map[string]metadata.ZNodeStat{"/a": {Mzxid: 1, Pzxid: 1}}))
	require.NoError(t, err)
	require.Equal(t, []Delivery{{1, EventNodeCreated, "/b"}}, r.Trigger(created("/b")))
	require.Equal(t, []Delivery{{1, EventNodeDeleted, "/a"}}, r.Trigger(deleted("/a")))
	require.Zero(t, r.Count())
}

// TestRearmLimit: past the limit Rearm still fires, arms what fits and
// reports ErrTooMany.
func TestRearmLimit(t *testing.T) {
	r := NewRegistry(2)
	require.NoError(t, r.Add(1, "/a", Data))
	got, err := r.Rearm(1, 10, SetWatches{
		Data:       []string{"/a", "/b", "/c", "/gone"},
		Persistent: []string{"/d"},
	}, tree(map[string]metadata.ZNodeStat{"/a": {}, "/b": {}, "/c": {}}))
	require.ErrorIs(t, err, ErrTooMany)
	require.Equal(t, []Delivery{{1, EventNodeDeleted, "/gone"}}, got)
	require.Equal(t, 2, r.CountConn(1))
	require.True(t, r.has(w{1, "/a", Data}), "already held: no slot needed")
	require.True(t, r.has(w{1, "/b", Data}))
	checkIndexes(t, r)
}

// TestRearmHostile: 100,000 paths, many repeated, cost linear time and
// one lookup each; the limit caps what is armed.
func TestRearmHostile(t *testing.T) {
	const n = 100_000
	var sw SetWatches
	for i := range n {
		sw.Data = append(sw.Data, fmt.Sprintf("/n%d", i%(n/2)))
		sw.Child = append(sw.Child, fmt.Sprintf("/gone%d", i%10))
	}
	lookups := 0
	r := NewRegistry(1000)
	got, err := r.Rearm(1, 10, sw, func(p string) (metadata.ZNodeStat, bool) {
		lookups++
		return metadata.ZNodeStat{}, p[1] == 'n'
	})
	require.ErrorIs(t, err, ErrTooMany)
	require.Len(t, got, 10)
	require.Equal(t, 2*n, lookups)
	require.Equal(t, 1000, r.Count())
}
