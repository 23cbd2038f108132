package metadata

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRangePage(t *testing.T) {
	s := New()
	idx := uint64(0)
	put := func(k, v string) {
		idx++
		_, res := s.Apply(idx, (&Command{ID: idx, Op: OpPut, Key: k, Value: []byte(v)}).Marshal())
		require.NoError(t, res.Err)
	}
	for i := range 10 {
		put(fmt.Sprintf("a/%d", i), "vv")
	}
	put("a", "not under a/")
	put("b/0", "v")

	kvs, more := s.RangePage("a/", "", 4, 0)
	require.True(t, more)
	require.Equal(t, []string{"a/0", "a/1", "a/2", "a/3"}, keysOf(kvs))
	kvs, more = s.RangePage("a/", "a/3", 4, 0)
	require.True(t, more)
	require.Equal(t, "a/4", kvs[0].Key)
	kvs, more = s.RangePage("a/", "a/7", 4, 0)
	require.False(t, more)
	require.Equal(t, []string{"a/8", "a/9"}, keysOf(kvs))
	// An exact fit is not "more".
	kvs, more = s.RangePage("a/", "a/5", 4, 0)
	require.False(t, more)
	require.Len(t, kvs, 4)
	// Size bound: keys of 3 bytes and values of 2, 5 bytes each.
	kvs, more = s.RangePage("a/", "", 0, 12)
	require.True(t, more)
	require.Len(t, kvs, 2)
	// The first key always comes back, however small the bound.
	kvs, more = s.RangePage("a/", "", 0, 1)
	require.True(t, more)
	require.Len(t, kvs, 1)
	kvs, more = s.RangePage("", "", 0, 0)
	require.False(t, more)
	require.Len(t, kvs, 12)
}

func keysOf(kvs []KV) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}
