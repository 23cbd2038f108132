package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
)

// apiCode is the API error code of err ("" if err is not an API error).
func apiCode(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// Past a tiny --quota-bytes, puts, lease grants and job submits get
// 507 no_space and the alarm metric is 1, while reads, deletes and lease
// revokes work; after the keys are deleted, writes work again.
func TestQuota_NoSpaceThenDeletesFreeSpace(t *testing.T) {
	const quota = 1 << 20
	c := newCluster(t, 1, fmt.Sprintf("--quota-bytes=%d", quota))
	c.startAll()
	c.waitLeader(30 * time.Second)
	n := c.nodes[1]
	cl := c.client()
	ctx := context.Background()

	lease, err := cl.Grant(ctx, time.Minute)
	require.NoError(t, err)
	val := []byte(strings.Repeat("q", 256<<10))
	var keys []string
	var full error
	for i := 0; i < 10 && full == nil; i++ { // 1 MiB of 256 KiB values: the 5th put at the latest is past it
		key := fmt.Sprintf("big/%d", i)
		if _, full = cl.Put(ctx, key, val); full == nil {
			keys = append(keys, key)
		}
	}
	require.Error(t, full, "puts past the quota must be refused")
	require.Equal(t, "no_space", apiCode(full), "%v", full)
	require.Contains(t, full.Error(), "delete")
	require.GreaterOrEqual(t, len(keys), 4)
	require.Equal(t, 1.0, metricValue(t, n, "corral_quota_exceeded"))
	require.Greater(t, metricValue(t, n, "corral_state_bytes"), float64(quota))

	_, err = cl.Put(ctx, "small", []byte("x"))
	require.Equal(t, "no_space", apiCode(err), "even a small put: %v", err)
	_, err = cl.PutWithLease(ctx, "eph", []byte("x"), lease.ID)
	require.Equal(t, "no_space", apiCode(err), "a lease-attached put: %v", err)
	_, err = cl.Grant(ctx, time.Minute)
	require.Equal(t, "no_space", apiCode(err), "a lease grant: %v", err)
	_, _, err = cl.SubmitJob(ctx, []byte(`{"name":"q","task":{"command":"/bin/true"}}`))
	require.Equal(t, "no_space", apiCode(err), "a job submit: %v", err)

	kv, err := cl.Get(ctx, keys[0])
	require.NoError(t, err, "reads work past the quota")
	require.Len(t, kv.Value, len(val))
	require.NoError(t, cl.Revoke(ctx, lease.ID), "lease revokes work past the quota")
	for _, k := range keys {
		_, deleted, err := cl.Delete(ctx, k)
		require.NoError(t, err, "deletes work past the quota")
		require.EqualValues(t, 1, deleted)
	}
	require.Equal(t, 0.0, metricValue(t, n, "corral_quota_exceeded"))
	_, err = cl.Put(ctx, "small", []byte("x"))
	require.NoError(t, err, "writes work again once space is freed")
}

// --max-leases refuses the grant past the cap with 429 too_many_leases; a
// revoke makes room again.
func TestQuota_LeaseCap(t *testing.T) {
	c := newCluster(t, 1, "--max-leases=3")
	c.startAll()
	c.waitLeader(30 * time.Second)
	cl := c.client()
	ctx := context.Background()
	var ids []int64
	for range 3 {
		l, err := cl.Grant(ctx, time.Minute)
		require.NoError(t, err)
		ids = append(ids, l.ID)
	}
	_, err := cl.Grant(ctx, time.Minute)
	require.Equal(t, "too_many_leases", apiCode(err), "%v", err)
	require.Contains(t, err.Error(), "--max-leases 3")
	require.NoError(t, cl.Revoke(ctx, ids[0]))
	_, err = cl.Grant(ctx, time.Minute)
	require.NoError(t, err)
}

// A binpacked job with count 30 and no resources spreads over three
// workers started with --max-allocs=10, instead of piling onto one; ten
// more instances stay unplaced with a reason naming --max-allocs.
func TestQuota_ZeroResourceJobSpreadsUnderMaxAllocs(t *testing.T) {
	c := newCluster(t, 1, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	var ws []*workerProc
	for _, name := range []string{"qa", "qb", "qc"} {
		w := c.newWorker(name, "--max-allocs=10", "--cpu=100000", "--memory=100000")
		w.start()
		ws = append(ws, w)
	}
	for _, w := range ws {
		c.waitWorker(w.id(), "alive", 30*time.Second)
	}
	marker := fmt.Sprintf("7%08d", time.Now().UnixNano()%1e8)
	spec := func(count int) []byte {
		return []byte(fmt.Sprintf(`{"name":"zero","count":%d,"placement":"binpack","task":{"command":"/bin/sleep","args":["%s"],"kill_timeout":"1s"}}`,
			count, marker))
	}
	cl := c.client()
	ctx := context.Background()
	_, _, err := cl.SubmitJob(ctx, spec(30))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = cl.StopJob(context.Background(), "zero") })
	as := c.waitAllocs("zero", "30 placed", 60*time.Second, func(as []itAlloc) bool { return len(as) == 30 })
	perWorker := map[string]int{}
	for _, a := range as {
		perWorker[a.Worker]++
	}
	require.Equal(t, map[string]int{ws[0].id(): 10, ws[1].id(): 10, ws[2].id(): 10}, perWorker, "%s", describe(as))

	_, _, err = cl.SubmitJob(ctx, spec(40))
	require.NoError(t, err)
	var job client.Job
	require.Eventually(t, func() bool {
		job, _, err = cl.Job(ctx, "zero")
		return err == nil && job.Version == 2 && job.Unplaced == 10
	}, 30*time.Second, 50*time.Millisecond, "10 of 40 unplaced: %+v (%v)", job, err)
	require.Contains(t, job.Reason, "--max-allocs", job.Reason)
	// A new version may replace allocations (stopped ones stay listed):
	// count the live ones, per worker.
	as, _ = c.allocs("zero")
	live := map[string]int{}
	for _, a := range as {
		if !metadata.AllocState(a.State).Terminal() {
			live[a.Worker]++
		}
	}
	for w, n := range live {
		require.LessOrEqual(t, n, 10, "worker %s took more than its --max-allocs: %s", w, describe(as))
	}
}
