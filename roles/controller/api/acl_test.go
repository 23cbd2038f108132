package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
)

// TestRoutePerms_CoverEveryRoute fails when a route is added without a
// permission (it would be refused to all but management tokens) or a
// permission outlives its route.
func TestRoutePerms_CoverEveryRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) { f.cfg.EnablePprof = true })
	registered := map[string]bool{}
	for _, p := range f.srv.routeMux().patterns {
		registered[p] = true
		_, ok := routePerms[p]
		require.True(t, ok, "route %q has no entry in routePerms (acl.go)", p)
	}
	var stale []string
	for p := range routePerms {
		if !registered[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	require.Empty(t, stale, "routePerms names routes that are not registered")
}

// aclFixture is a fixture with ACLs bootstrapped: it returns the
// management token's secret.
func aclFixture(t *testing.T, setup ...func(*fixture)) (*fixture, string) {
	t.Helper()
	f := newFixture(t, setup...)
	rec := f.do("POST", "/v1/acl/bootstrap", "", "X-Corral-Client", "test")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	secret := jsonBody(t, rec)["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "corral-acl-"), secret)
	return f, secret
}

// as sends a request with token tok.
func (f *fixture) as(tok, method, path, body string) *httptest.ResponseRecorder {
	return f.do(method, path, body, "Authorization", "Bearer "+tok, "X-Corral-Client", "test", "Content-Type", "application/json")
}

// token makes a policy with rules and a client token for it.
func (f *fixture) token(t *testing.T, mgmt, name, rules string) string {
	t.Helper()
	rec := f.as(mgmt, "PUT", "/v1/acl/policies/"+name, `{"rules": `+rules+`}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = f.as(mgmt, "POST", "/v1/acl/tokens", `{"name": "`+name+`", "policies": ["`+name+`"]}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	return jsonBody(t, rec)["secret"].(string)
}

// deleteToken deletes the tokens named name, with management token mgmt.
func (f *fixture) deleteToken(t *testing.T, mgmt, name string) {
	t.Helper()
	rec := f.as(mgmt, "GET", "/v1/acl/tokens", "")
	var list struct {
		Tokens []struct {
			AccessorID string `json:"accessor_id"`
			Name       string `json:"name"`
		} `json:"tokens"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &list))
	for _, tk := range list.Tokens {
		if tk.Name == name {
			require.Equal(t, http.StatusOK, f.as(mgmt, "DELETE", "/v1/acl/tokens/"+tk.AccessorID, "").Code)
		}
	}
}

func requireDenied(t *testing.T, rec *httptest.ResponseRecorder, resource, access string, name *string) {
	t.Helper()
	require.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
	var body struct {
		Code       string `json:"code"`
		Error      string `json:"error"`
		Permission struct {
			Resource string  `json:"resource"`
			Access   string  `json:"access"`
			Name     *string `json:"name"`
		} `json:"permission"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, "permission_denied", body.Code)
	require.Equal(t, resource, body.Permission.Resource, rec.Body.String())
	require.Equal(t, access, body.Permission.Access, rec.Body.String())
	require.Equal(t, name, body.Permission.Name, rec.Body.String())
	require.Contains(t, body.Error, resource+":"+access)
}

func strp(s string) *string { return &s }

func TestACL_OpenUntilBootstrapThenTokensOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.Equal(t, http.StatusOK, f.do("PUT", "/v1/kv/a", "1", "X-Corral-Client", "test").Code)
	rec := f.do("GET", "/v1/acl/token/self", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, false, jsonBody(t, rec)["acl_enabled"])

	rec = f.do("POST", "/v1/acl/bootstrap", "", "X-Corral-Client", "test")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	root := jsonBody(t, rec)["secret"].(string)

	requireAnswer(t, f.do("GET", "/v1/kv/a", ""), http.StatusUnauthorized, "unauthorized")
	requireAnswer(t, f.as("corral-acl-00", "GET", "/v1/kv/a", ""), http.StatusUnauthorized, "unauthorized")
	require.Equal(t, http.StatusOK, f.as(root, "GET", "/v1/kv/a", "").Code)
	requireAnswer(t, f.as(root, "POST", "/v1/acl/bootstrap", ""), http.StatusConflict, "acl_bootstrapped")
	// Probes and the dashboard's files stay open.
	require.Equal(t, http.StatusOK, f.do("GET", "/healthz", "").Code)

	rec = f.as(root, "GET", "/v1/acl/token/self", "")
	self := jsonBody(t, rec)
	require.Equal(t, true, self["acl_enabled"])
	require.Equal(t, "management", self["type"])
	// No list shows a secret or its hash.
	rec = f.as(root, "GET", "/v1/acl/tokens", "")
	require.NotContains(t, rec.Body.String(), root[len("corral-acl-"):])
	require.NotContains(t, rec.Body.String(), "secret")
}

func TestACL_ReadOnlyTokenCannotWrite(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t)
	require.Equal(t, http.StatusOK, f.as(root, "PUT", "/v1/kv/app/x", "1").Code)
	ro := f.token(t, root, "ro", `[{"resource": "kv", "access": "read"}, {"resource": "jobs", "access": "read"},
		{"resource": "coord", "access": "read"}, {"resource": "workers", "access": "read"}, {"resource": "operator", "access": "read"}]`)

	require.Equal(t, http.StatusOK, f.as(ro, "GET", "/v1/kv/app/x", "").Code)
	require.Equal(t, http.StatusOK, f.as(ro, "GET", "/v1/kv/?prefix=true", "").Code)
	require.Equal(t, http.StatusOK, f.as(ro, "GET", "/v1/jobs", "").Code)
	requireDenied(t, f.as(ro, "PUT", "/v1/kv/app/x", "2"), "kv", "write", strp("app/x"))
	requireDenied(t, f.as(ro, "DELETE", "/v1/kv/app/x", ""), "kv", "write", strp("app/x"))
	requireDenied(t, f.as(ro, "POST", "/v1/jobs", `{"name": "web", "task": {"command": "id"}}`), "jobs", "write", nil)
	requireDenied(t, f.as(ro, "POST", "/v1/workers/w1/drain", `{"drain": true}`), "workers", "write", strp(""))
	requireDenied(t, f.as(ro, "POST", "/v1/leases", `{"ttl": "10s"}`), "coord", "write", nil)
	requireDenied(t, f.as(ro, "GET", "/v1/snapshot", ""), "operator", "write", strp(""))
	rec := f.as(ro, "GET", "/v1/acl/tokens", "")
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Contains(t, rec.Body.String(), "management")
	// Nothing changed.
	rec = f.as(root, "GET", "/v1/kv/app/x", "")
	require.Equal(t, "1", jsonBody(t, rec)["value"])
}

func TestACL_PrefixScopedTokens(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t)
	require.Equal(t, http.StatusOK, f.as(root, "PUT", "/v1/kv/other/secret", "s").Code)
	app := f.token(t, root, "app", `[{"resource": "kv", "prefix": "app/", "access": "write"},
		{"resource": "jobs", "prefix": "app-", "access": "write"}]`)

	require.Equal(t, http.StatusOK, f.as(app, "PUT", "/v1/kv/app/x", "1").Code)
	require.Equal(t, http.StatusOK, f.as(app, "GET", "/v1/kv/app/?prefix=true", "").Code)
	requireDenied(t, f.as(app, "GET", "/v1/kv/other/secret", ""), "kv", "read", strp("other/secret"))
	requireDenied(t, f.as(app, "GET", "/v1/kv/?prefix=true", ""), "kv", "read", strp(""))
	requireDenied(t, f.as(app, "GET", "/v1/kv/ap?prefix=true", ""), "kv", "read", strp("ap"))
	requireDenied(t, f.as(app, "GET", "/v1/watch/other/", ""), "kv", "read", strp("other/"))

	// Jobs: the spec's name decides, lists show only what the token reads.
	requireDenied(t, f.as(app, "POST", "/v1/jobs", `{"name": "web", "task": {"command": "id"}}`), "jobs", "write", strp("web"))
	require.Equal(t, http.StatusOK, f.as(app, "POST", "/v1/jobs", `{"name": "app-web", "task": {"command": "id"}}`).Code)
	require.Equal(t, http.StatusOK, f.as(root, "POST", "/v1/jobs", `{"name": "web", "task": {"command": "id"}}`).Code)
	rec := f.as(app, "GET", "/v1/jobs", "")
	require.Contains(t, rec.Body.String(), `"app-web"`)
	require.NotContains(t, rec.Body.String(), `"web"`)
	requireDenied(t, f.as(app, "GET", "/v1/jobs/web", ""), "jobs", "read", strp("web"))
	requireDenied(t, f.as(app, "DELETE", "/v1/jobs/web", ""), "jobs", "write", strp("web"))
}

func TestACL_PolicyChangesApplyAtOnce(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t)
	tok := f.token(t, root, "p", `[{"resource": "kv", "prefix": "a/", "access": "read"}]`)
	require.Equal(t, http.StatusNotFound, f.as(tok, "GET", "/v1/kv/a/x", "").Code)
	require.Equal(t, http.StatusOK, f.as(root, "PUT", "/v1/acl/policies/p", `{"rules": [{"resource": "kv", "prefix": "b/", "access": "read"}]}`).Code)
	requireDenied(t, f.as(tok, "GET", "/v1/kv/a/x", ""), "kv", "read", strp("a/x"))
	f.deleteToken(t, root, "p")
	requireAnswer(t, f.as(tok, "GET", "/v1/kv/b/x", ""), http.StatusUnauthorized, "unauthorized")
	// Bad policies are refused with the reason.
	rec := f.as(root, "PUT", "/v1/acl/policies/bad", `{"rules": [{"resource": "operator", "prefix": "x", "access": "read"}]}`)
	requireAnswer(t, rec, http.StatusBadRequest, "bad_request")
	require.Contains(t, rec.Body.String(), "takes no prefix")
	rec = f.as(root, "POST", "/v1/acl/tokens", `{"name": "x", "policies": ["nope"]}`)
	requireAnswer(t, rec, http.StatusBadRequest, "bad_request")
	require.Contains(t, rec.Body.String(), "nope")
}

func TestACL_APITokenFileIsManagement(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(path, []byte("file-token\n"), 0o600))
	f := newFixture(t, func(f *fixture) { f.cfg.APITokenFile = path })
	requireAnswer(t, f.do("GET", "/v1/kv/a", ""), http.StatusUnauthorized, "unauthorized")
	rec := f.as("file-token", "POST", "/v1/acl/bootstrap", "")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	root := jsonBody(t, rec)["secret"].(string)
	require.Equal(t, http.StatusNotFound, f.as("file-token", "GET", "/v1/kv/a", "").Code)
	require.Equal(t, http.StatusNotFound, f.as(root, "GET", "/v1/kv/a", "").Code)
}

func TestACL_PerTokenLeaseLimitAndOwnership(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t, func(f *fixture) { f.cfg.Limits.MaxLeasesPerToken = 1 })
	a := f.token(t, root, "a", `[{"resource": "coord", "prefix": "a-", "access": "write"}]`)
	b := f.token(t, root, "b", `[{"resource": "coord", "prefix": "b-", "access": "write"}]`)
	rec := f.as(a, "POST", "/v1/leases", `{"ttl": "10s"}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	lease := jsonBody(t, rec)["id"].(float64)
	requireAnswer(t, f.as(a, "POST", "/v1/leases", `{"ttl": "10s"}`), http.StatusTooManyRequests, "too_many_leases")
	require.Equal(t, http.StatusOK, f.as(b, "POST", "/v1/leases", `{"ttl": "10s"}`).Code, "the limit is per token")

	id := strconv.FormatInt(int64(lease), 10)
	requireDenied(t, f.as(b, "DELETE", "/v1/leases/"+id, ""), "coord", "write", strp(""))
	require.Equal(t, http.StatusOK, f.as(a, "DELETE", "/v1/leases/"+id, "").Code)
	require.Equal(t, http.StatusOK, f.as(a, "POST", "/v1/leases", `{"ttl": "10s"}`).Code, "a revoked lease frees its slot")
}

func TestACL_PerTokenWatchLimit(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t, func(f *fixture) { f.cfg.Limits.MaxWatchesPerToken = 2 })
	tok := f.token(t, root, "w", `[{"resource": "kv", "access": "read"}]`)
	req, _ := http.NewRequest("GET", "/", nil)
	req = req.WithContext(judged{id: f.srv.store.State().ACL().Lookup(tok)}.into(req.Context()))
	r1, err := f.srv.takeWatch(req)
	require.NoError(t, err)
	_, err = f.srv.takeWatch(req)
	require.NoError(t, err)
	_, err = f.srv.takeWatch(req)
	require.Equal(t, "too_many_watches", errorFor(err).Code)
	r1()
	_, err = f.srv.takeWatch(req)
	require.NoError(t, err, "a closed watch frees its slot")
}

func TestACL_MetricsAcceptOperatorRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "metrics")
	require.NoError(t, os.WriteFile(path, []byte("m-token"), 0o600))
	f, root := aclFixture(t, func(f *fixture) { f.cfg.MetricsTokenFile = path })
	op := f.token(t, root, "mon", `[{"resource": "operator", "access": "read"}]`)
	kv := f.token(t, root, "kv", `[{"resource": "kv", "access": "read"}]`)
	require.Equal(t, http.StatusOK, f.as(op, "GET", "/metrics", "").Code)
	require.Equal(t, http.StatusUnauthorized, f.as(kv, "GET", "/metrics", "").Code)
}

// BenchmarkACL_Get is one GET /v1/kv through the whole handler (browser
// checks, auth, route permission, the read), without ACLs and with a
// client token whose policy has several rules: the difference is what
// ACLs cost a request (docs/PERFORMANCE.md, "ACL cost").
func BenchmarkACL_Get(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			t := &testing.T{}
			f := newFixture(t, func(f *fixture) { f.cfg.Logger = slog.New(slog.DiscardHandler) })
			tok := ""
			if on {
				rec := f.do("POST", "/v1/acl/bootstrap", "", "X-Corral-Client", "test")
				root := jsonBody(t, rec)["secret"].(string)
				tok = f.token(t, root, "app", `[{"resource": "jobs", "prefix": "x-", "access": "read"},
					{"resource": "coord", "prefix": "y-", "access": "write"}, {"resource": "kv", "prefix": "other/", "access": "read"},
					{"resource": "kv", "prefix": "app/", "access": "write"}]`)
			}
			f.do("PUT", "/v1/kv/app/x", "1", "X-Corral-Client", "test", "Authorization", "Bearer "+tok)
			h := f.srv.Handler()
			req := httptest.NewRequest("GET", "/v1/kv/app/x?consistency=serializable", nil)
			if on {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// Until one linearizable read succeeds after start, the ACL state may
// miss changes still in the log: requests are refused with 503 rather
// than judged on it (a bootstrapped cluster must not look open).
func TestACL_WaitsForCatchUpAfterStart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.srv.aclCaughtUp.Store(false)
	f.store.mu.Lock()
	f.store.err = fault.ErrNoLeader
	f.store.mu.Unlock()
	requireAnswer(t, f.do("GET", "/v1/kv/a?consistency=serializable", ""), http.StatusServiceUnavailable, "no_leader")
	require.Equal(t, http.StatusOK, f.do("GET", "/healthz", "").Code, "probes stay open")
	require.Equal(t, http.StatusOK, f.do("GET", "/v1/cluster", "").Code, "status answers on a controller cut off since start")
	f.store.mu.Lock()
	f.store.err = nil
	f.store.mu.Unlock()
	require.Equal(t, http.StatusNotFound, f.do("GET", "/v1/kv/a?consistency=serializable", "").Code)
	f.store.mu.Lock()
	f.store.err = errors.New("partitioned later")
	f.store.mu.Unlock()
	require.Equal(t, http.StatusNotFound, f.do("GET", "/v1/kv/a?consistency=serializable", "").Code,
		"once caught up, serializable reads work without a leader")
}

// A follower judges a request on its applied state, which can lag an ACL
// change the leader already acknowledged. A linearizable read waits for
// that state anyway, and the caller is judged again on it: a bootstrap or
// a token deletion the read catches up with is in force for that read
// (CI, 2026-12-06: a follower served an anonymous read just after
// bootstrap).
func TestACL_LinearizableReadJudgedAgainAfterCatchingUp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.store.catchUpOnRead(func() {
		rec := f.do("POST", "/v1/acl/bootstrap", "", "X-Corral-Client", "test")
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	})
	requireAnswer(t, f.do("GET", "/v1/kv/x", ""), http.StatusUnauthorized, "unauthorized")

	g, root := aclFixture(t)
	tok := g.token(t, root, "reader", `[{"resource": "kv", "access": "read"}]`)
	require.Equal(t, http.StatusNotFound, g.as(tok, "GET", "/v1/kv/x", "").Code)
	g.store.catchUpOnRead(func() { g.deleteToken(t, root, "reader") })
	requireAnswer(t, g.as(tok, "GET", "/v1/kv/x", ""), http.StatusUnauthorized, "unauthorized")

	// A caller still allowed, whose grants changed while it waited, is
	// asked to retry rather than served on the old grants.
	tok = g.token(t, root, "narrowed", `[{"resource": "kv", "access": "read"}]`)
	g.store.catchUpOnRead(func() {
		rec := g.as(root, "PUT", "/v1/acl/policies/narrowed", `{"rules": [{"resource": "kv", "access": "read", "prefix": "x"}]}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	})
	requireAnswer(t, g.as(tok, "GET", "/v1/kv/x", ""), http.StatusServiceUnavailable, "acl_changed")
	require.Equal(t, http.StatusNotFound, g.as(tok, "GET", "/v1/kv/x", "").Code, "the retry is served")
}

// The other way round: a token or a grant made a moment ago, which this
// controller has not applied yet, is looked for again after a
// linearizable read before a refusal is answered.
func TestACL_RefusalWaitsForCatchingUp(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t)
	const secret = "corral-acl-made-a-moment-ago"
	sum := sha256.Sum256([]byte(secret))
	f.token(t, root, "reader", `[{"resource": "kv", "access": "read", "prefix": "a"}]`)
	f.store.catchUpOnRead(func() {
		_, err := f.store.ProposePayload(context.Background(), metadata.OpACLTokenCreate, metadata.ACLToken{
			AccessorID: "0123456789abcdef", SecretSHA256: hex.EncodeToString(sum[:]), Name: "late",
			Type: metadata.ACLTypeClient, Policies: []string{"reader"}, CreatedAtMS: 1})
		require.NoError(t, err)
	})
	require.Equal(t, http.StatusNotFound, f.as(secret, "GET", "/v1/kv/a1?consistency=serializable", "").Code,
		"a token applied while the refusal waited is served")

	f.store.catchUpOnRead(func() {
		rec := f.as(root, "PUT", "/v1/acl/policies/reader", `{"rules": [{"resource": "kv", "access": "read"}]}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	})
	require.Equal(t, http.StatusNotFound, f.as(secret, "GET", "/v1/kv/b1?consistency=serializable", "").Code,
		"a grant applied while the refusal waited is served")

	requireAnswer(t, f.as("corral-acl-never-made", "GET", "/v1/kv/a1", ""), http.StatusUnauthorized, "unauthorized")
	requireDenied(t, f.as(secret, "PUT", "/v1/kv/a1", "x"), "kv", "write", strp("a1"))
}

func TestLeaseList_PagedByID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := 0; i < 3; i++ {
		require.Equal(t, http.StatusOK, f.do("POST", "/v1/leases", `{"ttl": "10s"}`, "X-Corral-Client", "t").Code)
	}
	var page struct {
		Leases []struct {
			ID int64 `json:"id"`
		} `json:"leases"`
		More bool `json:"more"`
	}
	rec := f.do("GET", "/v1/leases?limit=2", "")
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page), rec.Body.String())
	require.Len(t, page.Leases, 2)
	require.True(t, page.More)
	rec = f.do("GET", "/v1/leases?after="+strconv.FormatInt(page.Leases[1].ID, 10), "")
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	require.Len(t, page.Leases, 1)
	require.False(t, page.More)
	requireAnswer(t, f.do("GET", "/v1/leases?limit=10001", ""), http.StatusBadRequest, "bad_request")
}

func TestACL_TokenCreateBeforeBootstrapRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rec := f.do("POST", "/v1/acl/tokens", `{"name": "m", "type": "management"}`, "X-Corral-Client", "t")
	requireAnswer(t, rec, http.StatusConflict, "acl_not_bootstrapped")
	require.Contains(t, rec.Body.String(), "corral acl bootstrap")
}

// A write judged on ACL state that changes before the write reaches the
// log (a follower that had not applied the change yet) is refused at
// apply with a retryable 503 and changes nothing; the retry is judged on
// the new state. The same for the KV stream's frames. A write by the
// --api-token-file token is not fenced: the replicated ACLs do not govern
// it.
func TestACL_WriteJudgedBeforeAChangeIsRefused(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t)
	tok := f.token(t, root, "writer", `[{"resource": "kv", "access": "write"}]`)
	f.store.beforePropose(func() { f.deleteToken(t, root, "writer") })
	requireAnswer(t, f.as(tok, "PUT", "/v1/kv/x", "v"), http.StatusServiceUnavailable, "acl_changed")
	_, ok := f.store.State().Get("x")
	require.False(t, ok)
	requireAnswer(t, f.as(tok, "PUT", "/v1/kv/x", "v"), http.StatusUnauthorized, "unauthorized")

	tok = f.token(t, root, "streamer", `[{"resource": "kv", "access": "write"}]`)
	s, resp := openTestStream(t, serveFixture(t, f), tok)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	f.store.beforePropose(func() {
		rec := f.as(root, "PUT", "/v1/acl/policies/streamer", `{"rules": [{"resource": "kv", "access": "read"}]}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	})
	s.ask(streamFrame(1, streamPut, 0, "y", []byte("v"))).requireError(t, http.StatusServiceUnavailable, "acl_changed")
	_, ok = f.store.State().Get("y")
	require.False(t, ok)

	path := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(path, []byte("file-token\n"), 0o600))
	g := newFixture(t, func(f *fixture) { f.cfg.APITokenFile = path })
	g.store.beforePropose(func() {
		_, err := g.store.ProposePayload(context.Background(), metadata.OpACLBootstrap, metadata.ACLBootstrap{Token: metadata.ACLToken{
			AccessorID: "00000000000000aa", SecretSHA256: metadata.ACLSecretHash("root"), Name: "root",
			Type: metadata.ACLTypeManagement, CreatedAtMS: 1}})
		require.NoError(t, err)
	})
	require.Equal(t, http.StatusOK, g.as("file-token", "PUT", "/v1/kv/z", "v").Code)
}
