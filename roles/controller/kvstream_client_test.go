package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// The Go client's KV stream against three real controllers (real raft,
// Pebble and HTTP listeners; the cluster link in memory): the answers are
// the HTTP calls', many goroutines share one stream per endpoint, and the
// client carries on when the controller it streams to stops.
func TestKVStream_GoClientOverThreeControllers(t *testing.T) {
	mc := newMemCluster(t, 3, func(c *Config) { c.HTTPAddr = "127.0.0.1:0" })
	lead := mc.waitLeader(mc.ids()...)
	var eps []string
	for _, id := range append(mc.others(lead), lead) { // a follower first
		eps = append(eps, "http://"+mc.node(id).HTTPAddr())
	}
	cl, err := client.New(client.Config{Endpoints: eps, Timeout: 10 * time.Second})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	rev, err := cl.Put(ctx, "s/a", []byte("one"))
	require.NoError(t, err)
	kv, err := cl.Get(ctx, "s/a")
	require.NoError(t, err)
	require.Equal(t, client.KV{Key: "s/a", Value: []byte("one"), CreateRevision: rev, ModRevision: rev, Version: 1}, *kv)
	_, err = cl.CompareAndPut(ctx, "s/a", []byte("x"), rev+100)
	require.ErrorIs(t, err, client.ErrCompareFailed)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, rev, ce.ModRevision)
	rev2, err := cl.CompareAndPut(ctx, "s/a", []byte("two"), rev)
	require.NoError(t, err)
	kv, err = cl.Get(ctx, "s/a", client.Serializable())
	require.NoError(t, err)
	require.Equal(t, "two", string(kv.Value))
	require.Equal(t, rev2, kv.ModRevision)
	_, err = cl.Put(ctx, "_corral/x", []byte("v"))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 400, ce.Status)
	// Beyond the API's limits the call goes over HTTP, whose answer names
	// the limit; the stream is not ended by a frame it would refuse.
	_, err = cl.Put(ctx, strings.Repeat("k", 2000), []byte("v"))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 413, ce.Status)
	_, deleted, err := cl.Delete(ctx, "s/a")
	require.NoError(t, err)
	require.EqualValues(t, 1, deleted)
	_, err = cl.Get(ctx, "s/a")
	require.ErrorIs(t, err, client.ErrNotFound)

	// 32 goroutines share the client's streams.
	putConcurrently(t, 32, 20, func(g, i int) error {
		_, err := cl.Put(ctx, fmt.Sprintf("many/%d/%d", g, i), []byte("v"))
		return err
	})
	kvs, _, err := cl.List(ctx, "many/")
	require.NoError(t, err)
	require.Len(t, kvs, 640)
	require.GreaterOrEqual(t, streamedPuts(t, eps), 640, "the puts went over the stream")

	// The leader stops (its streams close with it): the client goes on at
	// the others. A call in flight at that moment may fail with an unknown
	// outcome, as over HTTP; the calls after it succeed.
	mc.stopNode(lead)
	mc.waitLeader(mc.others(lead)...)
	var last error
	ok := 0
	for i := 0; i < 200 && ok < 20; i++ {
		if _, last = cl.Put(ctx, fmt.Sprintf("after/%d", i), []byte("v")); last == nil {
			ok++
		}
	}
	require.Equal(t, 20, ok, "last error: %v", last)
	kv, err = cl.Get(ctx, "after/0")
	if err != nil { // after/0 may have been the call in flight
		require.True(t, errors.Is(err, client.ErrNotFound), "%v", err)
	}
}

// streamedPuts counts the puts the controllers at eps answered 200 on a
// KV stream (their request-duration histogram, route "STREAM put").
func streamedPuts(t *testing.T, eps []string) int {
	t.Helper()
	n := 0
	for _, ep := range eps {
		resp, err := http.Get(ep + "/metrics")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, `corral_http_request_duration_seconds_count{code="200",route="STREAM put"}`) {
				f := strings.Fields(line)
				v, err := strconv.Atoi(f[len(f)-1])
				require.NoError(t, err)
				n += v
			}
		}
	}
	return n
}
