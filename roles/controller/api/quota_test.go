package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// TestQuota fills the state past a small quota: writes that add data get
// 507 no_space, reads, deletes, lease revokes and job stops still work,
// and deleting brings writes back.
func TestQuota(t *testing.T) {
	t.Parallel()
	const quota = 4096
	f := newFixture(t, func(f *fixture) { f.cfg.Limits = Limits{QuotaBytes: quota} })
	requireAnswer(t, f.do("POST", "/v1/jobs", `{"name": "web", "task": {"command": "x"}}`), http.StatusOK, "")
	m := requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "10s"}`), http.StatusOK, "")
	lease := int64(m["id"].(float64))
	big := strings.Repeat("x", 1024)
	for i := 0; f.store.State().Bytes() <= quota; i++ {
		require.Less(t, i, 10, "the state should pass the quota after a few 1 KiB puts")
		requireAnswer(t, f.do("PUT", fmt.Sprintf("/v1/kv/big/%d", i), big), http.StatusOK, "")
	}

	refused := []struct{ method, path, body string }{
		{"PUT", "/v1/kv/app/a", "v"},
		{"PUT", "/v1/kv/big/0", "smaller"}, // an overwrite is refused too, as in etcd
		{"PUT", fmt.Sprintf("/v1/kv/app/e?lease=%d", lease), "v"},
		{"POST", "/v1/leases", `{"ttl": "10s"}`},
		{"POST", "/v1/jobs", `{"name": "other", "task": {"command": "x"}}`},
	}
	for _, r := range refused {
		m := requireAnswer(t, f.do(r.method, r.path, r.body), http.StatusInsufficientStorage, "no_space")
		require.Contains(t, m["error"], "delete", "the error says how to free space")
		require.Contains(t, m["error"], "--quota-bytes")
	}
	requireAnswer(t, f.do("GET", "/v1/kv/big/0", ""), http.StatusOK, "")
	requireAnswer(t, f.do("GET", "/v1/kv/big/?prefix=true", ""), http.StatusOK, "")
	requireAnswer(t, f.do("DELETE", "/v1/jobs/web", ""), http.StatusOK, "")
	requireAnswer(t, f.do("DELETE", fmt.Sprintf("/v1/leases/%d", lease), ""), http.StatusOK, "")
	for _, kv := range f.store.State().Range("big/", 0) {
		requireAnswer(t, f.do("DELETE", "/v1/kv/"+kv.Key, ""), http.StatusOK, "")
	}
	require.LessOrEqual(t, f.store.State().Bytes(), int64(quota))
	requireAnswer(t, f.do("PUT", "/v1/kv/app/a", "v"), http.StatusOK, "")
}

// TestNoQuota: a zero quota refuses nothing.
func TestNoQuota(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	big := strings.Repeat("x", 1024)
	for i := range 8 {
		requireAnswer(t, f.do("PUT", fmt.Sprintf("/v1/kv/big/%d", i), big), http.StatusOK, "")
	}
}

// TestMaxLeases refuses grants at the cap with too_many_leases; a revoke
// makes room.
func TestMaxLeases(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) { f.cfg.Limits = Limits{MaxLeases: 3} })
	var ids []int64
	for range 3 {
		m := requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "10s"}`), http.StatusOK, "")
		ids = append(ids, int64(m["id"].(float64)))
	}
	m := requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "10s"}`), http.StatusTooManyRequests, "too_many_leases")
	require.Contains(t, m["error"], "--max-leases 3")
	requireAnswer(t, f.do("PUT", fmt.Sprintf("/v1/kv/app/e?lease=%d", ids[0]), "v"), http.StatusOK, "")
	requireAnswer(t, f.do("DELETE", fmt.Sprintf("/v1/leases/%d", ids[0]), ""), http.StatusOK, "")
	requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "10s"}`), http.StatusOK, "")
}

// TestGrowsData is the list of ops refused past the quota: those that add
// user data, and no op that frees space or keeps the cluster running.
func TestGrowsData(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op   metadata.Op
		want bool
	}{
		{metadata.OpPut, true}, {metadata.OpPutLease, true}, {metadata.OpLeaseGrant, true},
		{metadata.OpLockAcquire, true}, {metadata.OpJobRegister, true},
		{metadata.OpDelete, false}, {metadata.OpDeleteSystem, false}, {metadata.OpLeaseRevoke, false},
		{metadata.OpLockRelease, false}, {metadata.OpJobStop, false}, {metadata.OpWorkerRegister, false},
		{metadata.OpAllocUpdate, false}, {metadata.OpPlan, false}, {metadata.OpWorkerDrain, false},
		{metadata.OpWorkerFence, false}, {metadata.OpCertRevoke, false},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, growsData(tc.op))
		})
	}
}
