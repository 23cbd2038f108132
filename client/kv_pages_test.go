package client

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestListFollowsPages(t *testing.T) {
	f := newFakeAPI(t)
	f.pageSize = 3
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	ctx := context.Background()
	for i := range 10 {
		_, err := c.Put(ctx, fmt.Sprintf("p/%02d", i), []byte("v"))
		require.NoError(t, err)
	}
	_, err := c.Put(ctx, "q", []byte("v"))
	require.NoError(t, err)

	kvs, _, err := c.List(ctx, "p/")
	require.NoError(t, err)
	require.Len(t, kvs, 10)
	for i, kv := range kvs {
		require.Equal(t, fmt.Sprintf("p/%02d", i), kv.Key)
	}

	var sizes []int
	_, err = c.ListPages(ctx, "p/", 4, func(p Page) error {
		sizes = append(sizes, len(p.KVs))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []int{4, 4, 2}, sizes)
	req, _ := f.last()
	require.Equal(t, "p/07", req.URL.Query().Get("after"))
	require.Equal(t, "4", req.URL.Query().Get("limit"))

	p, err := c.ListPage(ctx, "p/", "", 0)
	require.NoError(t, err)
	require.True(t, p.More)
	require.Equal(t, "p/02", p.Next)

	// A server from before pagination answers every key at once.
	f.mu.Lock()
	f.noPages = true
	f.mu.Unlock()
	kvs, _, err = c.List(ctx, "p/")
	require.NoError(t, err)
	require.Len(t, kvs, 10)

	// Nothing under the prefix: an empty list, not nil.
	kvs, _, err = c.List(ctx, "none/")
	require.NoError(t, err)
	require.NotNil(t, kvs)
	require.Empty(t, kvs)
}
