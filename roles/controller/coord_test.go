package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/api"
	"github.com/corral-dev/corral/roles/controller/coord"
)

func readyNode(t *testing.T) (*Controller, string) {
	t.Helper()
	c := startHTTPNode(t, map[uint64]string{1: "mem-1"}, nil)
	base := "http://" + c.HTTPAddr()
	require.Eventually(t, func() bool {
		code, _ := do(t, "GET", base+"/readyz", "")
		return code == 200
	}, 10*time.Second, 10*time.Millisecond)
	return c, base
}

func grantHTTP(t *testing.T, base, ttl string) int64 {
	t.Helper()
	code, out := do(t, "POST", base+"/v1/leases", fmt.Sprintf(`{"ttl":%q}`, ttl))
	require.Equal(t, 200, code, out)
	return int64(out["id"].(float64))
}

func TestCoord_LeaseEphemeralKeysAndErrors(t *testing.T) {
	_, base := readyNode(t)
	id := grantHTTP(t, base, "1s")
	code, out := do(t, "PUT", fmt.Sprintf("%s/v1/kv/eph/a?lease=%d", base, id), "v")
	require.Equal(t, 200, code, out)
	code, out = do(t, "GET", fmt.Sprintf("%s/v1/leases/%d", base, id), "")
	require.Equal(t, 200, code, out)
	require.Equal(t, []any{"eph/a"}, out["keys"])

	// Keep-alives hold the lease well past its TTL.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		code, out = do(t, "POST", fmt.Sprintf("%s/v1/leases/%d/keepalive", base, id), "")
		require.Equal(t, 200, code, out)
		code, _ = do(t, "GET", base+"/v1/kv/eph/a", "")
		require.Equal(t, 200, code)
		time.Sleep(200 * time.Millisecond) // keep-alive cadence, not a wait for a condition
	}
	code, out = do(t, "POST", base+"/v1/leases/keepalive", fmt.Sprintf(`{"ids":[%d, 999]}`, id))
	require.Equal(t, 200, code, out)
	require.Equal(t, []any{float64(999)}, out["not_found"])

	// Without them it expires and takes the key along.
	require.Eventually(t, func() bool {
		code, _ := do(t, "GET", base+"/v1/kv/eph/a", "")
		return code == 404
	}, 5*time.Second, 20*time.Millisecond)
	code, out = do(t, "GET", fmt.Sprintf("%s/v1/leases/%d", base, id), "")
	require.Equal(t, 404, code)
	require.Equal(t, "lease_not_found", out["code"])

	// Bad input is refused with 4xx and changes nothing.
	for _, tc := range []struct{ method, path, body, code string }{
		{"POST", "/v1/leases", `{"ttl":"1ms"}`, "bad_request"},
		{"POST", "/v1/leases", `{"ttl":"forever"}`, "bad_request"},
		{"POST", "/v1/leases", `{"tll":"10s"}`, "bad_request"},
		{"PUT", "/v1/kv/x?lease=abc", "v", "bad_request"},
		{"PUT", fmt.Sprintf("/v1/kv/x?lease=%d", id), "v", "lease_not_found"},
		{"PUT", "/v1/kv/_corral/x?lease=1", "v", "bad_request"},
		{"PUT", "/v1/kv/_corral/x", "v", "bad_request"},
		{"DELETE", "/v1/leases/77", "", "lease_not_found"},
		{"POST", "/v1/locks/l", "", "bad_request"},
		{"POST", "/v1/locks/l?lease=1&wait=2h", "", "bad_request"},
		{"POST", "/v1/elections/e/campaign?lease=1", "", "bad_request"},
		{"PUT", "/v1/services/s/i?lease=1", "{", "bad_request"},
		{"PUT", "/v1/services/corral-worker/i?lease=1", "{}", "bad_request"},
		{"GET", "/v1/watch/?from_revision=-1", "", "bad_request"},
	} {
		code, out := do(t, tc.method, base+tc.path, tc.body)
		require.GreaterOrEqual(t, code, 400, "%s %s", tc.method, tc.path)
		require.Less(t, code, 500, "%s %s", tc.method, tc.path)
		require.Equal(t, tc.code, out["code"], "%s %s: %v", tc.method, tc.path, out)
	}
}

func TestCoord_LockFIFOTokensAndWait(t *testing.T) {
	_, base := readyNode(t)
	l1, l2, l3 := grantHTTP(t, base, "30s"), grantHTTP(t, base, "30s"), grantHTTP(t, base, "2s")
	acquire := func(l int64, wait string) (int, map[string]any) {
		return do(t, "POST", fmt.Sprintf("%s/v1/locks/job?lease=%d&wait=%s", base, l, wait), "")
	}
	code, out := acquire(l1, "0s")
	require.Equal(t, 200, code, out)
	t1 := int64(out["fencing_token"].(float64))

	// Try-lock and a short wait fail with lock_busy and leave no waiter.
	code, out = acquire(l2, "0s")
	require.Equal(t, 409, code)
	require.Equal(t, "lock_busy", out["code"])
	code, _ = acquire(l2, "100ms")
	require.Equal(t, 409, code)
	_, out = do(t, "GET", base+"/v1/locks/job", "")
	require.Nil(t, out["waiters"])

	type got struct {
		lease int64
		code  int
		token int64
	}
	results := make(chan got, 2)
	var wg sync.WaitGroup
	wait := func(l int64) {
		defer wg.Done()
		code, out := acquire(l, "20s")
		g := got{lease: l, code: code}
		if code == 200 {
			g.token = int64(out["fencing_token"].(float64))
		}
		results <- g
	}
	waiters := func(n int) func() bool {
		return func() bool {
			_, out := do(t, "GET", base+"/v1/locks/job", "")
			w, _ := out["waiters"].([]any)
			return len(w) == n
		}
	}
	wg.Add(2)
	go wait(l2)
	require.Eventually(t, waiters(1), 5*time.Second, 10*time.Millisecond)
	go wait(l3)
	require.Eventually(t, waiters(2), 5*time.Second, 10*time.Millisecond)

	code, out = do(t, "DELETE", fmt.Sprintf("%s/v1/locks/job?lease=%d", base, l1), "")
	require.Equal(t, 200, code, out)
	g := <-results
	require.Equal(t, got{lease: l2, code: 200, token: g.token}, g, "FIFO: l2 queued first")
	require.Greater(t, g.token, t1)
	// l3's lease (2s TTL, never kept alive) expires while waiting: it is
	// never granted the lock.
	g3 := <-results
	wg.Wait()
	require.Equal(t, l3, g3.lease)
	require.Equal(t, 404, g3.code)
	_, out = do(t, "GET", base+"/v1/locks/job", "")
	require.Equal(t, float64(l2), out["lease"])

	// Revoking the holder's lease frees the lock; the next token is larger.
	code, _ = do(t, "DELETE", fmt.Sprintf("%s/v1/leases/%d", base, l2), "")
	require.Equal(t, 200, code)
	code, out = acquire(l1, "1s")
	require.Equal(t, 200, code, out)
	require.Greater(t, int64(out["fencing_token"].(float64)), g.token)

	// Elections are locks with an identity; the token is the epoch.
	code, out = do(t, "POST", fmt.Sprintf("%s/v1/elections/coord/campaign?lease=%d&id=node-a", base, l1), "")
	require.Equal(t, 200, code, out)
	code, out = do(t, "GET", base+"/v1/elections/coord", "")
	require.Equal(t, 200, code, out)
	require.Equal(t, "node-a", out["leader"])
	require.NotZero(t, out["epoch"])
	code, _ = do(t, "POST", fmt.Sprintf("%s/v1/elections/coord/resign?lease=%d", base, l1), "")
	require.Equal(t, 200, code)
	_, out = do(t, "GET", base+"/v1/elections/coord", "")
	require.Nil(t, out["leader"])

	// Services: instances live with their lease.
	code, out = do(t, "PUT", fmt.Sprintf("%s/v1/services/master/m1?lease=%d", base, l1), `{"address":"10.0.0.1:5678","metadata":{"zone":"a"}}`)
	require.Equal(t, 200, code, out)
	_, out = do(t, "GET", base+"/v1/services/master", "")
	inst := out["instances"].([]any)
	require.Len(t, inst, 1)
	require.Equal(t, "10.0.0.1:5678", inst[0].(map[string]any)["address"])
	code, _ = do(t, "DELETE", fmt.Sprintf("%s/v1/leases/%d", base, l1), "")
	require.Equal(t, 200, code)
	_, out = do(t, "GET", base+"/v1/services/master", "")
	require.Empty(t, out["instances"])
}

// watchStream opens a watch and returns a function yielding its lines.
func watchStream(t *testing.T, url string) (func() api.WatchLine, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	next := func() api.WatchLine {
		t.Helper()
		require.True(t, sc.Scan(), "watch stream ended: %v", sc.Err())
		var l api.WatchLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		return l
	}
	return next, func() { cancel(); resp.Body.Close() }
}

func TestCoord_WatchHTTPResumeAndProgress(t *testing.T) {
	_, base := readyNode(t)
	var revs []int64
	for i := range 5 {
		_, out := do(t, "PUT", fmt.Sprintf("%s/v1/kv/w/%d", base, i), fmt.Sprint(i))
		revs = append(revs, int64(out["revision"].(float64)))
	}
	do(t, "PUT", base+"/v1/kv/other", "x")
	next, stop := watchStream(t, fmt.Sprintf("%s/v1/watch/w/?from_revision=%d&progress_interval=100ms", base, revs[2]))
	defer stop()
	require.Equal(t, "progress", next().Type)
	for i := 2; i < 5; i++ {
		l := next()
		require.Equal(t, "put", l.Type)
		require.Equal(t, fmt.Sprintf("w/%d", i), l.Key)
		require.Equal(t, revs[i], l.ModRevision)
	}
	_, out := do(t, "DELETE", base+"/v1/kv/w/0", "")
	l := next()
	require.Equal(t, "delete", l.Type)
	require.Equal(t, int64(out["revision"].(float64)), l.ModRevision)
	// Idle: a progress line at the current revision.
	l = next()
	require.Equal(t, "progress", l.Type)
	require.GreaterOrEqual(t, l.Revision, int64(out["revision"].(float64)))
}

func TestCoord_LeaseSurvivesLeaderChange(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	ctx := context.Background()
	const ttl = 1500 * time.Millisecond
	res, err := proposeCoord(ctx, mc.node(lead), metadata.OpLeaseGrant, "", metadata.LeaseGrantPayload{TTLMS: ttl.Milliseconds()})
	require.NoError(t, err)
	id := res.Out.(metadata.LeaseGrant).ID
	_, err = proposeCoord(ctx, mc.node(lead), metadata.OpPutLease, "svc/a", metadata.PutLeasePayload{Value: []byte("x"), Lease: id})
	require.NoError(t, err)
	// Keep it alive for a while on the leader.
	for range 5 {
		_, missing, err := keepAlive(ctx, mc.node(lead), []int64{id})
		require.NoError(t, err)
		require.Empty(t, missing)
		time.Sleep(ttl / 3) // keep-alive cadence
	}
	others := mc.others(lead)
	// The new leader is elected after the stop, so stop + TTL is a lower
	// bound on "a full TTL from its election" that does not depend on when
	// this test gets to see the election (a loaded machine may notice it
	// hundreds of milliseconds late). A deadline carried over from the old
	// leader would end near stop + 2/3 TTL, well before it.
	stopped := time.Now()
	mc.stopNode(lead)
	newLead := mc.waitLeader(others...)
	// A follower's keep-alive refuses (it would be proxied over HTTP).
	for _, o := range others {
		if o != newLead {
			_, _, err := keepAlive(ctx, mc.node(o), []int64{id})
			require.Error(t, err)
		}
	}
	// The new leader gives the lease a full TTL from its election, then
	// expires it and deletes the key on every replica.
	require.Eventually(t, func() bool {
		_, ok := mc.node(newLead).State().Lease(id)
		return !ok
	}, 10*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(stopped), ttl, "lease expired early after the leader change")
	for _, o := range others {
		require.Eventually(t, func() bool {
			_, ok := mc.node(o).State().Get("svc/a")
			return !ok
		}, 5*time.Second, 10*time.Millisecond)
	}
}

// serve runs one request against c's handler in-process.
func serve(t *testing.T, c *Controller, method, path, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return rec.Code, out
}

func TestCoord_LocksThroughFollowersAndCompactedWatch(t *testing.T) {
	mc := newMemCluster(t, 3, nil)
	lead := mc.waitLeader(mc.ids()...)
	f := mc.others(lead)
	grant := func(c *Controller) int64 {
		code, out := serve(t, c, "POST", "/v1/leases", `{"ttl":"30s"}`)
		require.Equal(t, 200, code, out)
		return int64(out["id"].(float64))
	}
	l1, l2 := grant(mc.node(f[0])), grant(mc.node(f[1]))
	code, out := serve(t, mc.node(f[0]), "POST", fmt.Sprintf("/v1/locks/m?lease=%d&wait=1s", l1), "")
	require.Equal(t, 200, code, out)
	tok1 := out["fencing_token"].(float64)
	done := make(chan map[string]any, 1)
	go func() {
		_, out := serve(t, mc.node(f[1]), "POST", fmt.Sprintf("/v1/locks/m?lease=%d&wait=10s", l2), "")
		done <- out
	}()
	require.Eventually(t, func() bool {
		lk, _ := mc.node(lead).State().LockState(metadata.SystemPrefix + "locks/m")
		return len(lk.Waiters) == 1
	}, 5*time.Second, 5*time.Millisecond)
	code, _ = serve(t, mc.node(lead), "DELETE", fmt.Sprintf("/v1/locks/m?lease=%d", l1), "")
	require.Equal(t, 200, code)
	out = <-done
	require.Greater(t, out["fencing_token"].(float64), tok1, "%v", out)

	// A watch older than the window (here: reset as after a restart) is
	// refused with the oldest available revision.
	// (The follower may still apply entries meanwhile: the window starts
	// after the revision it was reset to.)
	c := mc.node(f[0])
	rev := c.State().Revision()
	c.hub.Reset(rev)
	code, out = serve(t, c, "GET", "/v1/watch/?from_revision=1", "")
	require.Equal(t, http.StatusGone, code)
	require.Equal(t, "compacted", out["code"])
	require.Equal(t, float64(rev+1), out["oldest_revision"])
}

// proposeCoord proposes a coordination op through c and returns its result
// or the error it applied with (Propose folds the two).
func proposeCoord(ctx context.Context, c *Controller, op metadata.Op, key string, p any) (metadata.Result, error) {
	cmd, err := metadata.NewCoordCommand(op, key, p)
	if err != nil {
		return metadata.Result{}, err
	}
	return c.Propose(ctx, cmd)
}

// keepAlive refreshes leases through c, as the API's keep-alive does.
func keepAlive(ctx context.Context, c *Controller, ids []int64) ([]coord.LeaseTTL, []int64, error) {
	return apiCoord{c}.KeepAlive(ctx, ids)
}
