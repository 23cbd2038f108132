package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/backup"
	"github.com/corral-dev/corral/roles/controller/api/view"
	"github.com/corral-dev/corral/roles/controller/fault"
)

// fixture is a Server over fakes; by default controller 1 leads, has
// applied everything and holds no data.
type fixture struct {
	cluster *fakeCluster
	store   *fakeStore
	workers *fakeWorkers
	coord   *fakeCoord
	watches *fakeWatches
	backups *fakeBackups
	cfg     Config
	srv     *Server
}

func newFixture(t *testing.T, setup ...func(*fixture)) *fixture {
	t.Helper()
	f := &fixture{
		cluster: &fakeCluster{self: 1, leader: 1, httpAddrs: map[uint64]string{}},
		store:   newFakeStore(),
		workers: &fakeWorkers{},
		coord:   &fakeCoord{alive: map[int64]int64{}},
		watches: &fakeWatches{},
		backups: &fakeBackups{},
		cfg: Config{NodeID: 1, HTTPAddr: "127.0.0.1:0", RequestTimeout: time.Second,
			TickInterval: time.Millisecond, Registry: prometheus.NewRegistry()},
	}
	for _, fn := range setup {
		fn(f)
	}
	f.srv = New(f.cfg, Backend{Cluster: f.cluster, Store: f.store, Workers: f.workers,
		Coordination: f.coord, Watches: f.watches, Backups: f.backups})
	require.NoError(t, f.srv.loadToken())
	// Tests inject store errors for the requests they make; the one
	// linearizable read after start that ACLs need (aclCurrent) is
	// TestACL_WaitsForCatchUpAfterStart's.
	f.srv.aclCaughtUp.Store(true)
	return f
}

// do serves one request; hdr holds header name/value pairs.
func (f *fixture) do(method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// jsonBody decodes a JSON answer, failing the test if it is not JSON.
func jsonBody(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"), rec.Body.String())
	var m map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m), rec.Body.String())
	return m
}

// requireAnswer checks an answer's status and, for errors, its code.
func requireAnswer(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, rec.Code, rec.Body.String())
	m := jsonBody(t, rec)
	if code != "" {
		require.Equal(t, code, m["code"], rec.Body.String())
		require.NotEmpty(t, m["error"], "every error says what went wrong")
	}
	return m
}

func TestKVRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := requireAnswer(t, f.do("PUT", "/v1/kv/app/a", "one"), http.StatusOK, "")
	require.EqualValues(t, 1, m["revision"])
	requireAnswer(t, f.do("PUT", "/v1/kv/app/a", "two"), http.StatusOK, "")

	m = requireAnswer(t, f.do("GET", "/v1/kv/app/a", ""), http.StatusOK, "")
	require.Equal(t, "two", m["value"])
	require.EqualValues(t, 2, m["mod_revision"])
	require.EqualValues(t, 1, m["create_revision"])
	require.EqualValues(t, 2, m["version"])
	require.EqualValues(t, 2, m["revision"])

	m = requireAnswer(t, f.do("GET", "/v1/kv/app/a?encoding=base64&consistency=serializable", ""), http.StatusOK, "")
	require.Equal(t, "dHdv", m["value"])
	require.Equal(t, "base64", m["encoding"])

	m = requireAnswer(t, f.do("GET", "/v1/kv/app/?prefix=true", ""), http.StatusOK, "")
	require.Len(t, m["kvs"], 1)

	// A put that names the current mod_revision succeeds; a stale one is
	// refused with the revision to retry from.
	requireAnswer(t, f.do("PUT", "/v1/kv/app/a?prev_revision=2", "three"), http.StatusOK, "")
	m = requireAnswer(t, f.do("PUT", "/v1/kv/app/a?prev_revision=2", "four"), http.StatusConflict, "compare_failed")
	require.EqualValues(t, 3, m["mod_revision"])

	m = requireAnswer(t, f.do("DELETE", "/v1/kv/app/a", ""), http.StatusOK, "")
	require.EqualValues(t, 1, m["deleted"])
	requireAnswer(t, f.do("GET", "/v1/kv/app/a", ""), http.StatusNotFound, "not_found")
}

func TestKVErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", MaxKeyBytes+1)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"empty key", "PUT", "/v1/kv/", "v", http.StatusBadRequest, "bad_request"},
		{"long key", "PUT", "/v1/kv/" + long, "v", http.StatusRequestEntityTooLarge, "too_large"},
		{"long key read", "GET", "/v1/kv/" + long, "", http.StatusRequestEntityTooLarge, "too_large"},
		{"large value", "PUT", "/v1/kv/a", strings.Repeat("v", MaxValueBytes+1), http.StatusRequestEntityTooLarge, "too_large"},
		{"reserved key", "PUT", "/v1/kv/" + metadata.SystemPrefix + "x", "v", http.StatusBadRequest, "bad_request"},
		{"reserved delete", "DELETE", "/v1/kv/" + metadata.SystemPrefix + "x", "", http.StatusBadRequest, "bad_request"},
		{"bad prev_revision", "PUT", "/v1/kv/a?prev_revision=x", "v", http.StatusBadRequest, "bad_request"},
		{"lease without id", "PUT", "/v1/kv/a?lease=", "v", http.StatusBadRequest, "bad_request"},
		{"unknown lease", "PUT", "/v1/kv/a?lease=7", "v", http.StatusNotFound, "lease_not_found"},
		{"bad encoding", "GET", "/v1/kv/a?encoding=hex", "", http.StatusBadRequest, "bad_request"},
		{"bad consistency", "GET", "/v1/kv/a?consistency=eventual", "", http.StatusBadRequest, "bad_request"},
		{"bad limit", "GET", "/v1/kv/a?prefix=true&limit=-1", "", http.StatusBadRequest, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			requireAnswer(t, f.do(tc.method, tc.path, tc.body), tc.status, tc.code)
		})
	}
}

// TestErrorMapping checks every kind of failure a backend returns gets
// its status and code, whichever handler it comes through.
func TestErrorMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"invalid", fault.New(fault.Invalid, "bad_thing", "no"), http.StatusBadRequest, "bad_thing"},
		{"not found", fault.New(fault.NotFound, "gone", "no"), http.StatusNotFound, "gone"},
		{"conflict", fault.New(fault.Conflict, "busy", "no"), http.StatusConflict, "busy"},
		{"unavailable", fault.New(fault.Unavailable, "down", "no"), http.StatusServiceUnavailable, "down"},
		{"timeout kind", fault.New(fault.Timeout, "timeout", "no"), http.StatusServiceUnavailable, "timeout"},
		{"no answer", fault.New(fault.NoAnswer, "silent", "no"), http.StatusGatewayTimeout, "silent"},
		{"limit", fault.New(fault.Limit, "limit", "no"), http.StatusTooManyRequests, "limit"},
		{"internal kind", fault.New(fault.Internal, "broken", "no"), http.StatusInternalServerError, "broken"},
		{"wrapped fault", fmt.Errorf("propose: %w", fault.New(fault.Conflict, "busy", "no")), http.StatusConflict, "busy"},
		{"no leader", fault.ErrNoLeader, http.StatusServiceUnavailable, "no_leader"},
		{"not leader", fault.ErrNotLeader, http.StatusServiceUnavailable, "not_leader"},
		{"timed out", fault.ErrTimeout, http.StatusServiceUnavailable, "timeout"},
		{"stopped", fault.ErrStopped, http.StatusServiceUnavailable, "no_leader"},
		{"unknown", errors.New("disk on fire"), http.StatusInternalServerError, "internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(f *fixture) {
				f.store.err = tc.err
				f.coord.err = tc.err
				f.cluster.err = tc.err
				f.backups.err = tc.err
			})
			want := tc.err.Error() // a fault's own message, without its wrapping
			var fe *fault.Error
			if errors.As(tc.err, &fe) {
				want = fe.Message
			}
			for _, req := range [][3]string{
				{"PUT", "/v1/kv/a", "v"},
				{"GET", "/v1/kv/a", ""},
				{"POST", "/v1/leases", `{"ttl": "10s"}`},
				{"POST", "/v1/leases/keepalive", `{"ids": [1]}`},
				{"POST", "/v1/controllers/2/transfer-leader", ""},
				{"POST", "/v1/controllers", `{"id": 2, "address": "127.0.0.1:2"}`},
				{"GET", "/v1/jobs", ""},
				{"GET", "/v1/snapshot", ""},
			} {
				m := requireAnswer(t, f.do(req[0], req[1], req[2]), tc.status, tc.code)
				require.Contains(t, m["error"], want, "%s %s", req[0], req[1])
			}
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	f := newFixture(t, func(f *fixture) { f.cfg.APITokenFile = tokenFile })

	for _, tc := range []struct {
		name, path string
		hdr        []string
		status     int
	}{
		{"no token", "/v1/cluster", nil, http.StatusUnauthorized},
		{"wrong token", "/v1/cluster", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"not bearer", "/v1/cluster", []string{"Authorization", "s3cret"}, http.StatusUnauthorized},
		{"unknown route too", "/v1/nothing", nil, http.StatusUnauthorized},
		{"token", "/v1/cluster", []string{"Authorization", "Bearer s3cret"}, http.StatusOK},
		{"healthz is open", "/healthz", nil, http.StatusOK},
		{"readyz is open", "/readyz", nil, http.StatusOK},
		{"metrics are open", "/metrics", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := f.do("GET", tc.path, "", tc.hdr...)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			if tc.status == http.StatusUnauthorized {
				requireAnswer(t, rec, http.StatusUnauthorized, "unauthorized")
			}
		})
	}
}

func TestTokenFileErrors(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))
	for _, file := range []string{empty, filepath.Join(t.TempDir(), "missing")} {
		s := New(Config{APITokenFile: file}, Backend{})
		require.Error(t, s.loadToken(), file)
	}
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                    string
		leader, commit, applied uint64
		status                  int
		code                    string
	}{
		{"no leader", 0, 5, 5, http.StatusServiceUnavailable, "not_ready"},
		{"applying", 1, 5, 4, http.StatusServiceUnavailable, "not_ready"},
		{"ready", 1, 5, 5, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(f *fixture) {
				f.cluster.leader, f.cluster.commit, f.cluster.applied = tc.leader, tc.commit, tc.applied
			})
			m := requireAnswer(t, f.do("GET", "/readyz", ""), tc.status, tc.code)
			require.EqualValues(t, tc.applied, m["applied_index"])
			require.EqualValues(t, tc.commit, m["commit_index"])
			if tc.code == "" {
				require.Equal(t, "ready", m["status"])
			}
		})
	}
	f := newFixture(t)
	require.Equal(t, map[string]any{"status": "ok"}, requireAnswer(t, f.do("GET", "/healthz", ""), http.StatusOK, ""))
}

func TestLeaderOnlyOnFollower(t *testing.T) {
	t.Parallel()
	routes := [][2]string{
		{"GET", "/v1/controllers"},
		{"POST", "/v1/controllers"},
		{"DELETE", "/v1/controllers/2"},
		{"POST", "/v1/leases/keepalive"},
		{"GET", "/v1/leases/1"},
	}
	for _, tc := range []struct {
		name   string
		leader uint64
		code   string
	}{
		{"no leader known", 0, "no_leader"},
		{"leader address unknown", 2, "not_leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(f *fixture) { f.cluster.leader = tc.leader })
			for _, r := range routes {
				requireAnswer(t, f.do(r[0], r[1], "{}"), http.StatusServiceUnavailable, tc.code)
			}
			// A keep-alive stream is not proxied: the client reconnects.
			requireAnswer(t, f.do("POST", "/v1/leases/keepalive/stream", ""), http.StatusServiceUnavailable, "not_leader")
		})
	}
	t.Run("forwarded twice", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(f *fixture) {
			f.cluster.leader, f.cluster.httpAddrs[2] = 2, "127.0.0.1:1"
		})
		requireAnswer(t, f.do("GET", "/v1/controllers", "", forwardedHeader, "3"), http.StatusServiceUnavailable, "not_leader")
	})
}

func TestControllersOnLeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := requireAnswer(t, f.do("GET", "/v1/controllers", ""), http.StatusOK, "")
	require.EqualValues(t, 1, m["leader_id"])
	require.Len(t, m["controllers"], 1)

	m = requireAnswer(t, f.do("POST", "/v1/controllers", `{"id": 2, "address": "127.0.0.1:7002"}`), http.StatusCreated, "")
	require.Equal(t, "learner", m["role"])
	requireAnswer(t, f.do("POST", "/v1/controllers", `{"id": 2, "adress": "x"}`), http.StatusBadRequest, "bad_request")
	requireAnswer(t, f.do("DELETE", "/v1/controllers/0", ""), http.StatusBadRequest, "bad_request")
	m = requireAnswer(t, f.do("DELETE", "/v1/controllers/2", ""), http.StatusOK, "")
	require.EqualValues(t, 2, m["removed"])
	m = requireAnswer(t, f.do("POST", "/v1/controllers/2/transfer-leader", ""), http.StatusOK, "")
	require.EqualValues(t, 2, m["leader_id"])
}

func TestWorkers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) {
		f.workers.list = view.WorkerList{Source: "leader", NodeID: 1, LeaderID: 1, ControllerEpoch: 4, Workers: []view.WorkerInfo{
			{ID: "w1", State: "alive", Addresses: []string{"10.0.0.1:9"}},
			{ID: "w2", State: "suspect"},
			{ID: "w3", State: "left"},
		}}
	})
	m := requireAnswer(t, f.do("GET", "/v1/workers", ""), http.StatusOK, "")
	require.Equal(t, "leader", m["source"])
	require.Len(t, m["workers"], 3)
	m = requireAnswer(t, f.do("GET", "/v1/workers?state=suspect", ""), http.StatusOK, "")
	require.Len(t, m["workers"], 1)
	requireAnswer(t, f.do("GET", "/v1/workers?state=sleepy", ""), http.StatusBadRequest, "bad_request")

	m = requireAnswer(t, f.do("GET", "/v1/workers/w1", ""), http.StatusOK, "")
	require.Equal(t, "w1", m["id"])
	require.EqualValues(t, 4, m["controller_epoch"])
	requireAnswer(t, f.do("GET", "/v1/workers/w9", ""), http.StatusNotFound, "not_found")

	m = requireAnswer(t, f.do("GET", "/v1/cluster", ""), http.StatusOK, "")
	require.Equal(t, map[string]any{"alive": 1.0, "suspect": 1.0, "left": 1.0}, m["workers"])

	// corral-worker lists the alive and suspect workers as instances.
	m = requireAnswer(t, f.do("GET", "/v1/services/"+WorkerService, ""), http.StatusOK, "")
	require.Len(t, m["instances"], 2)
}

func TestJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := requireAnswer(t, f.do("POST", "/v1/jobs", `{"name": "web", "count": -1, "task": {"command": "x"}}`),
		http.StatusBadRequest, "invalid_spec")
	require.Contains(t, m["error"], "count")
	fields, ok := m["fields"].([]any)
	require.True(t, ok, "an invalid spec names its fields: %v", m)
	require.Equal(t, "count", fields[0].(map[string]any)["field"])

	requireAnswer(t, f.do("POST", "/v1/jobs", strings.Repeat(" ", maxJobSpecBytes+1)), http.StatusRequestEntityTooLarge, "too_large")

	m = requireAnswer(t, f.do("POST", "/v1/jobs", `{"name": "web", "task": {"command": "sleep"}}`), http.StatusOK, "")
	require.Equal(t, true, m["changed"])
	require.Equal(t, "web", m["job"].(map[string]any)["name"])
	m = requireAnswer(t, f.do("GET", "/v1/jobs", ""), http.StatusOK, "")
	require.Len(t, m["jobs"], 1)
	requireAnswer(t, f.do("GET", "/v1/jobs/web", ""), http.StatusOK, "")
	requireAnswer(t, f.do("GET", "/v1/jobs/db", ""), http.StatusNotFound, "job_not_found")
	requireAnswer(t, f.do("DELETE", "/v1/jobs/db", ""), http.StatusNotFound, "job_not_found")
	requireAnswer(t, f.do("GET", "/v1/allocations/a1", ""), http.StatusNotFound, "allocation_not_found")
	requireAnswer(t, f.do("POST", "/v1/allocations/a1/restart", ""), http.StatusNotFound, "allocation_not_found")
	requireAnswer(t, f.do("GET", "/v1/allocations/a1/logs", ""), http.StatusNotFound, "allocation_not_found")
	requireAnswer(t, f.do("GET", "/v1/allocations/a1/logs?stream=stdin", ""), http.StatusBadRequest, "bad_request")
	requireAnswer(t, f.do("POST", "/v1/workers/w1/drain", `{"drain": "yes"}`), http.StatusBadRequest, "bad_request")
	requireAnswer(t, f.do("POST", "/v1/workers/w1/drain", ""), http.StatusNotFound, "worker_not_found")
}

func TestNotFoundCatchAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := requireAnswer(t, f.do("GET", "/v2/kv/a", ""), http.StatusNotFound, "not_found")
	require.Equal(t, "no route for GET /v2/kv/a; see docs/API.md", m["error"])
	requireAnswer(t, f.do("PATCH", "/nothing", ""), http.StatusNotFound, "not_found")
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	st := metadata.New()
	_, res := st.Apply(1, (&metadata.Command{Op: metadata.OpPut, Key: "k", Value: []byte("v")}).Marshal())
	require.NoError(t, res.Err)
	data, err := st.Snapshot()
	require.NoError(t, err)
	f := newFixture(t, func(f *fixture) {
		f.backups.header, f.backups.data = backup.Header{Index: 1, Term: 2, ClusterID: "test-cluster"}, data
	})
	rec := f.do("GET", "/v1/snapshot", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "application/octet-stream", rec.Header().Get("Content-Type"))
	require.Equal(t, "attachment; filename=corral-1.snap", rec.Header().Get("Content-Disposition"))
	require.Equal(t, "1", rec.Header().Get("X-Corral-Snapshot-Index"))
	require.Equal(t, "2", rec.Header().Get("X-Corral-Snapshot-Term"))
	b, err := backup.Decode(rec.Body)
	require.NoError(t, err)
	require.Equal(t, data, b.Data)
}

func TestLeasesAndLocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grant := func() int64 {
		m := requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "10s"}`), http.StatusOK, "")
		require.Equal(t, "10s", m["ttl"])
		return int64(m["id"].(float64))
	}
	l1, l2 := grant(), grant()
	requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "1ms"}`), http.StatusBadRequest, "bad_request")
	requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "10s", "x": 1}`), http.StatusBadRequest, "bad_request")

	m := requireAnswer(t, f.do("POST", fmt.Sprintf("/v1/locks/db?lease=%d", l1), ""), http.StatusOK, "")
	require.Equal(t, true, m["held"])
	m = requireAnswer(t, f.do("POST", fmt.Sprintf("/v1/locks/db?lease=%d", l2), ""), http.StatusConflict, "lock_busy")
	require.Contains(t, m["error"], "retry or wait longer")
	m = requireAnswer(t, f.do("GET", "/v1/locks/db", ""), http.StatusOK, "")
	require.EqualValues(t, l1, m["lease"])
	requireAnswer(t, f.do("POST", "/v1/elections/e/campaign?lease=1", ""), http.StatusBadRequest, "bad_request")
	requireAnswer(t, f.do("POST", "/v1/locks/a%2Fb?lease=1", ""), http.StatusBadRequest, "bad_request")

	m = requireAnswer(t, f.do("GET", fmt.Sprintf("/v1/leases/%d", l1), ""), http.StatusOK, "")
	require.Equal(t, []any{lockPrefix + "db"}, m["locks"])
	requireAnswer(t, f.do("GET", "/v1/leases/99", ""), http.StatusNotFound, "lease_not_found")
	requireAnswer(t, f.do("PUT", fmt.Sprintf("/v1/kv/eph?lease=%d", l2), "v"), http.StatusOK, "")
	requireAnswer(t, f.do("DELETE", fmt.Sprintf("/v1/leases/%d", l2), ""), http.StatusOK, "")
	requireAnswer(t, f.do("GET", "/v1/kv/eph", ""), http.StatusNotFound, "not_found")

	f.coord.alive[l1] = 10000
	m = requireAnswer(t, f.do("POST", "/v1/leases/keepalive", fmt.Sprintf(`{"ids": [%d, %d]}`, l1, l2)), http.StatusOK, "")
	require.Len(t, m["leases"], 1)
	require.Equal(t, []any{float64(l2)}, m["not_found"])
	requireAnswer(t, f.do("POST", fmt.Sprintf("/v1/leases/%d/keepalive", l1), ""), http.StatusOK, "")
	requireAnswer(t, f.do("POST", fmt.Sprintf("/v1/leases/%d/keepalive", l2), ""), http.StatusNotFound, "lease_not_found")
	requireAnswer(t, f.do("POST", "/v1/leases/keepalive", `{"ids": []}`), http.StatusBadRequest, "bad_request")
}

func TestWatch(t *testing.T) {
	t.Parallel()
	t.Run("too old", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, func(f *fixture) {
			f.watches.err = &WatchError{Code: "compacted", Message: "revision 1 is compacted", Oldest: 40}
		})
		m := requireAnswer(t, f.do("GET", "/v1/watch/a?from_revision=1", ""), http.StatusGone, "compacted")
		require.EqualValues(t, 40, m["oldest_revision"])
	})
	t.Run("bad query", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		requireAnswer(t, f.do("GET", "/v1/watch/a?progress_interval=1ms", ""), http.StatusBadRequest, "bad_request")
		requireAnswer(t, f.do("GET", "/v1/watch/a?encoding=hex", ""), http.StatusBadRequest, "bad_request")
	})
	t.Run("backlog then cut", func(t *testing.T) {
		t.Parallel()
		cut := make(chan struct{})
		close(cut)
		f := newFixture(t, func(f *fixture) {
			f.watches.watch = &fakeWatch{ready: make(chan struct{}), cut: cut,
				err: &WatchError{Code: "slow_watcher", Message: "too slow"}}
			f.watches.backlog = []metadata.Event{{Type: metadata.EventPut, Key: "a/x", Value: []byte("v"), ModRevision: 5}}
			f.watches.last = 5
		})
		rec := f.do("GET", "/v1/watch/a?from_revision=5", "")
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, "application/x-ndjson", rec.Header().Get("Content-Type"))
		var lines []WatchLine
		dec := json.NewDecoder(rec.Body)
		for {
			var l WatchLine
			if err := dec.Decode(&l); errors.Is(err, io.EOF) {
				break
			} else {
				require.NoError(t, err)
			}
			lines = append(lines, l)
		}
		require.Equal(t, []WatchLine{
			{Type: "progress", Revision: 4},
			{Type: "put", Key: "a/x", Value: "v", ModRevision: 5},
			{Type: "error", Error: "too slow", Code: "slow_watcher", ResumeRevision: 6},
		}, lines)
	})
}

func TestServices(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := requireAnswer(t, f.do("POST", "/v1/leases", `{"ttl": "10s"}`), http.StatusOK, "")
	lease := int64(m["id"].(float64))
	path := fmt.Sprintf("/v1/services/api/i1?lease=%d", lease)
	requireAnswer(t, f.do("PUT", path, `{"address": "10.0.0.1:80"}`), http.StatusOK, "")
	requireAnswer(t, f.do("PUT", path, `{"adress": "10.0.0.1:80"}`), http.StatusBadRequest, "bad_request")
	requireAnswer(t, f.do("PUT", "/v1/services/"+WorkerService+"/x?lease=1", `{}`), http.StatusBadRequest, "bad_request")
	m = requireAnswer(t, f.do("GET", "/v1/services/api", ""), http.StatusOK, "")
	require.Len(t, m["instances"], 1)
	requireAnswer(t, f.do("DELETE", "/v1/services/api/i1", ""), http.StatusOK, "")
}

func TestMetricsCountRoutes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.do("GET", "/v1/kv/a", "")
	rec := f.do("GET", "/metrics", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, bytes.Contains(rec.Body.Bytes(),
		[]byte(`corral_http_request_duration_seconds_count{code="404",route="GET /v1/kv/{key...}"} 1`)), rec.Body.String())
}
