package watch

import (
	"testing"

	"github.com/corral-dev/corral/metadata"
	"github.com/stretchr/testify/require"
)

// w is one watch to register in a table test.
type w struct {
	c ConnID
	p string
	k Kind
}

func created(p string) metadata.ZNodeEvent {
	return metadata.ZNodeEvent{Type: metadata.ZNodeCreated, Path: p, Zxid: 7}
}

func deleted(p string) metadata.ZNodeEvent {
	return metadata.ZNodeEvent{Type: metadata.ZNodeDeleted, Path: p, Zxid: 7}
}

func changed(p string) metadata.ZNodeEvent {
	return metadata.ZNodeEvent{Type: metadata.ZNodeDataChanged, Path: p, Zxid: 7}
}

func registry(t testing.TB, ws ...w) *Registry {
	t.Helper()
	r := NewRegistry(0)
	for _, x := range ws {
		require.NoError(t, r.Add(x.c, x.p, x.k))
	}
	return r
}

// TestTrigger is the table of DataTree's rules: which watch fires which
// event, and which watches are left afterwards (one-shot ones go,
// persistent ones stay).
func TestTrigger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		watches []w
		ev      metadata.ZNodeEvent
		want    []Delivery
		left    int // watches left after the trigger
	}{
		{"created fires data and exists on the node", []w{{1, "/a", Data}, {2, "/a", Exist}},
			created("/a"), []Delivery{{1, EventNodeCreated, "/a"}, {2, EventNodeCreated, "/a"}}, 0},
		{"created fires child on the parent", []w{{1, "/a", Child}, {2, "/a/b", Child}},
			created("/a/b"), []Delivery{{1, EventNodeChildrenChanged, "/a"}}, 1},
		{"created of a top-level node tells /", []w{{1, "/", Child}},
			created("/a"), []Delivery{{1, EventNodeChildrenChanged, "/"}}, 0},
		{"created leaves child watches on the node", []w{{1, "/a", Child}},
			created("/a"), nil, 1},
		{"created: persistent on node and parent", []w{{1, "/a/b", Persistent}, {2, "/a", Persistent}},
			created("/a/b"), []Delivery{{1, EventNodeCreated, "/a/b"}, {2, EventNodeChildrenChanged, "/a"}}, 2},
		{"created: recursive on node and every ancestor", []w{{1, "/a/b/c", PersistentRecursive}, {2, "/a/b", PersistentRecursive}, {3, "/a", PersistentRecursive}, {4, "/", PersistentRecursive}},
			created("/a/b/c"), []Delivery{{1, EventNodeCreated, "/a/b/c"}, {2, EventNodeCreated, "/a/b/c"}, {3, EventNodeCreated, "/a/b/c"}, {4, EventNodeCreated, "/a/b/c"}}, 4},
		{"recursive never gets children changed", []w{{1, "/a", PersistentRecursive}},
			created("/a/b"), []Delivery{{1, EventNodeCreated, "/a/b"}}, 1},
		{"recursive on a sibling or a descendant does not fire", []w{{1, "/ab", PersistentRecursive}, {2, "/a/b/c", PersistentRecursive}},
			created("/a/b"), nil, 2},
		{"deleted fires data, exists and child on the node", []w{{1, "/a", Data}, {2, "/a", Exist}, {3, "/a", Child}},
			deleted("/a"), []Delivery{{1, EventNodeDeleted, "/a"}, {2, EventNodeDeleted, "/a"}, {3, EventNodeDeleted, "/a"}}, 0},
		{"deleted fires child on the parent", []w{{1, "/a", Child}, {1, "/a", Data}},
			deleted("/a/b"), []Delivery{{1, EventNodeChildrenChanged, "/a"}}, 1},
		{"deleted: persistent and recursive", []w{{1, "/a/b", Persistent}, {2, "/a", Persistent}, {3, "/", PersistentRecursive}},
			deleted("/a/b"), []Delivery{{1, EventNodeDeleted, "/a/b"}, {2, EventNodeChildrenChanged, "/a"}, {3, EventNodeDeleted, "/a/b"}}, 3},
		{"data changed fires data and exists", []w{{1, "/a", Data}, {2, "/a", Exist}, {3, "/a", Child}, {4, "/", Child}},
			changed("/a"), []Delivery{{1, EventNodeDataChanged, "/a"}, {2, EventNodeDataChanged, "/a"}}, 2},
		{"data changed: persistent on node only, recursive above", []w{{1, "/a/b", Persistent}, {2, "/a", Persistent}, {3, "/a", PersistentRecursive}},
			changed("/a/b"), []Delivery{{1, EventNodeDataChanged, "/a/b"}, {3, EventNodeDataChanged, "/a/b"}}, 3},
		{"one delivery per type and path: data and child on a deleted node", []w{{1, "/a", Data}, {1, "/a", Child}, {1, "/a", Exist}, {1, "/a", Persistent}, {1, "/a", PersistentRecursive}},
			deleted("/a"), []Delivery{{1, EventNodeDeleted, "/a"}}, 2},
		{"one per type and path, but both types", []w{{1, "/a", Child}, {1, "/a/b", Data}},
			deleted("/a/b"), []Delivery{{1, EventNodeDeleted, "/a/b"}, {1, EventNodeChildrenChanged, "/a"}}, 0},
		{"sorted by connection", []w{{9, "/a", Data}, {3, "/a", Data}, {5, "/a", Data}},
			changed("/a"), []Delivery{{3, EventNodeDataChanged, "/a"}, {5, EventNodeDataChanged, "/a"}, {9, EventNodeDataChanged, "/a"}}, 0},
		{"unknown event type fires nothing", []w{{1, "/a", Data}},
			metadata.ZNodeEvent{Type: 9, Path: "/a"}, nil, 1},
		{"no watches", nil, created("/a"), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := registry(t, tc.watches...)
			require.Equal(t, tc.want, r.Trigger(tc.ev))
			require.Equal(t, tc.left, r.Count())
			checkIndexes(t, r)
		})
	}
}

// TestOneShot: a fired one-shot watch does not fire again; a persistent
// one fires every time.
func TestOneShot(t *testing.T) {
	r := registry(t, w{1, "/a", Data}, w{2, "/a", Persistent}, w{3, "/", PersistentRecursive})
	require.Len(t, r.Trigger(changed("/a")), 3)
	require.Equal(t, []Delivery{{2, EventNodeDataChanged, "/a"}, {3, EventNodeDataChanged, "/a"}}, r.Trigger(changed("/a")))
	require.Equal(t, 2, r.Count())
	require.Equal(t, 0, r.CountConn(1))
	// Re-arming after it fired works like the first time.
	require.NoError(t, r.Add(1, "/a", Data))
	require.Len(t, r.Trigger(changed("/a")), 3)
	checkIndexes(t, r)
}

func TestParent(t *testing.T) {
	for p, want := range map[string]string{"/a": "/", "/a/b": "/a", "/a/b/c": "/a/b"} {
		got, ok := parent(p)
		require.True(t, ok, p)
		require.Equal(t, want, got, p)
	}
	for _, p := range []string{"/", "", "a"} {
		_, ok := parent(p)
		require.False(t, ok, p)
	}
}
