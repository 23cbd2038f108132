package watch

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/corral-dev/corral/metadata"
	"github.com/stretchr/testify/require"
)

// TestConcurrent runs Add, Trigger, Remove, Rearm, DropConn and the counts
// from several goroutines; under -race it checks the locking, and the
// index check afterwards that no interleaving corrupted the indexes.
func TestConcurrent(t *testing.T) {
	r := NewRegistry(50)
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/d", "/d/e"}
	kinds := []Kind{Data, Exist, Child, Persistent, PersistentRecursive}
	evs := []metadata.ZNodeEventType{metadata.ZNodeCreated, metadata.ZNodeDeleted, metadata.ZNodeDataChanged}
	lookup := tree(map[string]metadata.ZNodeStat{"/a": {Mzxid: 1}, "/d": {Pzxid: 9}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				c := ConnID(g*10 + i%5)
				p := paths[(i*7+g)%len(paths)]
				switch i % 8 {
				case 0, 1, 2:
					err := r.Add(c, p, kinds[(i+g)%len(kinds)])
					if err != nil && err != ErrTooMany {
						t.Error(err)
					}
				case 3, 4:
					for _, d := range r.Trigger(metadata.ZNodeEvent{Type: evs[i%3], Path: p}) {
						if d.Conn == 0 && d.Path == "" {
							t.Error("empty delivery")
						}
					}
				case 5:
					r.Remove(c, p, int32(1+i%5))
					r.Check(c, p, TypeAny)
				case 6:
					_, _ = r.Rearm(c, 5, SetWatches{Data: paths[:3], Child: paths[3:], PersistentRecursive: paths[1:2]}, lookup)
				case 7:
					if i%64 == 7 {
						r.DropConn(c)
					}
					_ = r.Count() + r.CountConn(c) + r.Paths()
				}
				if i%100 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	checkIndexes(t, r)
	for c := range ConnID(40) {
		r.DropConn(c)
	}
	require.Zero(t, r.Count())
	require.Zero(t, r.Paths())
	checkIndexes(t, r)
}

// manyWatches registers n watches over n/10 connections on a tree of
// depth 4 (/p<i>/q<j>/r<k>), a mix of kinds with a few recursive ones.
func manyWatches(tb testing.TB, n int) (*Registry, []string) {
	r := NewRegistry(0)
	var paths []string
	for i := range n / 10 {
		paths = append(paths, fmt.Sprintf("/p%d/q%d/r%d", i%10, i%100, i))
	}
	conns := n / 10
	for i := range n {
		// Connection c's tenth watches land on ten different paths (j
		// shifts the path index by one), so all n are distinct.
		c, j := ConnID(i%conns), i/conns
		k := []Kind{Data, Exist, Child, Persistent}[(i+j)%4]
		p := paths[(i*7919+j)%len(paths)]
		if i%1000 == 0 {
			k, p = PersistentRecursive, fmt.Sprintf("/p%d/q%d", (i/1000)%10, (i/1000)%100)
		}
		require.NoError(tb, r.Add(c, p, k))
	}
	return r, paths
}

// TestManyWatches: 100,000 watches over 10,000 connections are held, and
// DropConn of every connection leaves nothing behind.
func TestManyWatches(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r, _ := manyWatches(t, 100_000)
	require.Equal(t, 100_000, r.Count())
	checkIndexes(t, r)
	for c := range ConnID(10_000) {
		r.DropConn(c)
	}
	require.Zero(t, r.Count())
	require.Zero(t, r.Paths())
}

// BenchmarkTrigger: a data change among 100,000 watches over 10,000
// connections costs the path's depth plus its watchers, not the
// registry's size. Each iteration changes the next path; the one-shot
// watches it fires go, as in service, while persistent ones keep firing.
func BenchmarkTrigger(b *testing.B) {
	r, paths := manyWatches(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Trigger(metadata.ZNodeEvent{Type: metadata.ZNodeDataChanged, Path: paths[i%len(paths)]})
	}
}

// BenchmarkTriggerNoWatch: a change nobody watches, with no recursive
// watches, is a couple of map lookups.
func BenchmarkTriggerNoWatch(b *testing.B) {
	r := NewRegistry(0)
	for i := range 100_000 {
		require.NoError(b, r.Add(ConnID(i%10_000), fmt.Sprintf("/w%d", i), Data))
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Trigger(metadata.ZNodeEvent{Type: metadata.ZNodeCreated, Path: "/x/y/z"})
	}
}
