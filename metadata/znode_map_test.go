package metadata

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// The map behaves as a plain map through freezes and thaws: writes while
// frozen land in the overlay (deletes of frozen nodes included), the base
// a cut reads never changes until its own thaw, a second freeze gets a
// copy, and a thaw of any other freeze changes nothing.
func TestZMapFreezeThaw(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]*ZNode{}
	var z zmap
	check := func() {
		t.Helper()
		require.Equal(t, len(model), z.len())
		if plain := z.plain(); len(model) > 0 || len(plain) > 0 {
			require.Equal(t, model, plain)
		}
		for i := range 40 {
			p := fmt.Sprintf("/n%d", i)
			require.Same(t, model[p], z.get(p), p)
		}
	}
	var (
		frozen   map[string]*ZNode // what the live freeze returned
		snapshot map[string]*ZNode // a copy of it, taken then
		id       uint64
	)
	for step := range 5000 {
		p := fmt.Sprintf("/n%d", rng.IntN(40))
		switch r := rng.IntN(100); {
		case r < 45:
			n := &ZNode{Version: int32(step)}
			model[p] = n
			z.set(p, n)
		case r < 85:
			delete(model, p)
			z.set(p, nil)
		case r < 92 && id == 0:
			id = uint64(step + 1)
			f := z.freeze(id)
			frozen = f.nodes
			require.Equal(t, len(model) > 0, f.shared)
			if !f.shared {
				id = 0
				continue
			}
			snapshot = make(map[string]*ZNode, len(frozen))
			for k, v := range frozen {
				snapshot[k] = v
			}
			// A second freeze meanwhile: its own copy, the same nodes.
			other := z.freeze(id + 1)
			require.False(t, other.shared)
			require.Equal(t, model, other.nodes)
		case r < 97 && id != 0:
			require.Equal(t, snapshot, frozen, "the frozen base changed before its thaw")
			z.thaw(id+1, nil) // not this freeze's id: nothing happens
			require.NotNil(t, z.over)
			z.thaw(id, nil)
			require.Nil(t, z.over)
			id = 0
		}
		check()
	}
}

// A cut freezes the znodes rather than copying them: taking one
// allocates next to nothing, where the copy it replaces
// was 21 ms and megabytes under the lock on the apply loop. Writing or
// releasing the cut thaws them, and the state is then exactly as if no
// cut had been taken.
func TestSnapshotCutFreezesZNodes(t *testing.T) {
	a := newApplier(t)
	b := newApplier(t)
	both := func(c *Command) {
		ra, rb := a.apply(c), b.apply(c)
		require.Equal(t, ra.Err, rb.Err)
	}
	both(zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/p", ACL: worldAll}))
	for i := range 10000 {
		both(zcmd(t, OpZNodeCreate, ZNodeCreate{Path: fmt.Sprintf("/p/%d", i), Data: []byte("d"), ACL: worldAll}))
	}

	// The least of three tries: TotalAlloc counts the runtime's own
	// allocations too. A copy of the map was 500 KB.
	least := uint64(1 << 62)
	var cut *SnapshotCut
	for range 3 {
		if cut != nil {
			cut.Release()
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cut = a.s.Cut()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	require.Less(t, least, uint64(64<<10), "a cut of 10,001 znodes allocated %d bytes", least)
	require.NotNil(t, a.s.ext.ZNodes.over, "the cut did not freeze the znodes")

	// Writes during the cut: deletes and changes of frozen nodes, a node
	// created and deleted again, new nodes.
	for i := range 100 {
		both(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: fmt.Sprintf("/p/%d", i), Version: -1}))
		both(zcmd(t, OpZNodeSetData, ZNodeSetData{Path: fmt.Sprintf("/p/%d", 1000+i), Data: []byte("e"), Version: -1}))
		both(zcmd(t, OpZNodeCreate, ZNodeCreate{Path: fmt.Sprintf("/q%d", i), ACL: worldAll}))
		both(zcmd(t, OpZNodeDelete, ZNodeDelete{Path: fmt.Sprintf("/q%d", i), Version: -1}))
		both(zcmd(t, OpZNodeCreate, ZNodeCreate{Path: fmt.Sprintf("/r%d", i), ACL: worldAll}))
	}
	require.Equal(t, mustSnapshot(t, b.s), mustSnapshot(t, a.s), "reads through the overlay differ")
	_, err := cut.WriteTo(io.Discard)
	require.NoError(t, err)
	require.Nil(t, a.s.ext.ZNodes.over, "writing the cut did not thaw the znodes")
	require.Equal(t, mustSnapshot(t, b.s), mustSnapshot(t, a.s))
	requireZConsistent(t, a.s)

	// A cut dropped unwritten thaws with Release; a restore meanwhile is
	// not touched by the old cut's thaw.
	c2 := a.s.Cut()
	both(zcmd(t, OpZNodeCreate, ZNodeCreate{Path: "/s", ACL: worldAll}))
	c2.Release()
	require.Nil(t, a.s.ext.ZNodes.over)
	require.Equal(t, mustSnapshot(t, b.s), mustSnapshot(t, a.s))
	c3 := a.s.Cut()
	snap := mustSnapshot(t, b.s)
	r, err := Restore(snap)
	require.NoError(t, err)
	require.NoError(t, a.s.RestoreFrom(snap))
	c3.Release()
	require.Equal(t, snap, mustSnapshot(t, a.s))
	require.Equal(t, mustSnapshot(t, r), mustSnapshot(t, a.s))
}

// orderZNodes from the previous order and the touched paths gives what a
// full sort gives, keeps the untouched entries' pointers, and sorts after
// all when the previous order does not account for the map.
func TestOrderZNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	nodes := map[string]*ZNode{}
	for i := range 500 {
		nodes[fmt.Sprintf("/p/%d", i)] = &ZNode{Version: int32(i)}
	}
	nodes["/p"], nodes["/p-x"], nodes["/p.y"] = &ZNode{}, &ZNode{}, &ZNode{} // '-' and '.' sort before '/'
	for round := range 20 {
		prev := sortedZNodes(nodes)
		touched := map[string]struct{}{}
		for range rng.IntN(60) {
			p := fmt.Sprintf("/p/%d", rng.IntN(700))
			touched[p] = struct{}{}
			switch rng.IntN(3) {
			case 0:
				delete(nodes, p)
			default:
				nodes[p] = &ZNode{Version: int32(1000 + round)}
			}
		}
		got, merged := orderZNodes(nodes, prev, touched)
		require.True(t, merged)
		require.Equal(t, sortedZNodes(nodes), got, "round %d", round)
	}

	// A path deleted but not recorded as touched: the merge would keep
	// it, so the count differs and it sorts instead.
	prev := sortedZNodes(nodes)
	delete(nodes, prev[10].path)
	got, merged := orderZNodes(nodes, prev, map[string]struct{}{})
	require.False(t, merged)
	require.Equal(t, sortedZNodes(nodes), got)
}

// A written cut leaves its order to the next cut, which merges only what
// was set since; a cut dropped unwritten leaves none, so the next one
// sorts. Each written cut is byte for byte the reference encoding of its
// nodes (run with -race: the cuts are written while applies go on).
func TestSnapshotCutsCarryTheirOrder(t *testing.T) {
	a := newApplier(t)
	rng := rand.New(rand.NewPCG(5, 6))
	require.NoError(t, zcreate(t, a, "/p", nil).Err)
	write := func(c *SnapshotCut) {
		t.Helper()
		want := encodeSnapshot(c.applied, c.rev, c.cid, c.tree, c.ext, encodeZNodes(c.znodes))
		var got bytes.Buffer
		done := make(chan error)
		go func() {
			_, err := c.WriteTo(&got)
			done <- err
		}()
		churn(t, a, rng, 20)
		require.NoError(t, <-done)
		require.Equal(t, want, got.Bytes())
	}
	churn(t, a, rng, 300)
	c := a.s.Cut()
	require.Nil(t, c.prevOrder, "the first cut has no order to start from")
	write(c)
	for i := range 6 {
		churn(t, a, rng, 50)
		if i == 2 {
			// Only data changes: the paths are the same, so only the
			// touched set tells the merge which pointers are old.
			for j := range 200 {
				a.apply(zcmd(t, OpZNodeSetData, ZNodeSetData{Path: fmt.Sprintf("/p/%d", j), Data: []byte{byte(i)}, Version: -1}))
			}
		}
		c := a.s.Cut()
		require.NotNil(t, c.prevOrder, "cut %d did not get the last cut's order", i)
		if i == 3 {
			c.Release()
			c = a.s.Cut()
			require.Nil(t, c.prevOrder, "a cut after a dropped one got an order")
		}
		write(c)
		require.Equal(t, i != 3, c.merged, "cut %d", i)
	}
	requireZConsistent(t, a.s)
}

// churn applies n random creates, setDatas and deletes under /p.
func churn(t *testing.T, a *applier, rng *rand.Rand, n int) {
	t.Helper()
	for range n {
		p := fmt.Sprintf("/p/%d", rng.IntN(200))
		var c *Command
		switch rng.IntN(3) {
		case 0:
			c = zcmd(t, OpZNodeCreate, ZNodeCreate{Path: p, Data: []byte("d"), ACL: worldAll})
		case 1:
			c = zcmd(t, OpZNodeSetData, ZNodeSetData{Path: p, Data: []byte{byte(rng.IntN(256))}, Version: -1})
		default:
			c = zcmd(t, OpZNodeDelete, ZNodeDelete{Path: p, Version: -1})
		}
		a.apply(c) // NoNode and NodeExists are part of the churn
	}
}
