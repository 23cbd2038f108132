package client

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeAPI imitates the corral HTTP API (as specified) on an in-memory map, so the client can be unit-tested
// without a cluster. It routes with a Go 1.22 ServeMux and {key...} wildcards, like the real server.
type fakeAPI struct {
	t     *testing.T
	srv   *httptest.Server
	token string

	hits atomic.Int64 // requests received

	mu       sync.Mutex
	rev      int64
	kvs      map[string]fakeKV
	failWith *apiError     // when set, every request gets this error answer
	lastReq  *http.Request // the most recent request (clone of headers/URL)
	lastKey  string        // PathValue("key") of the most recent kv request
	handler  http.Handler  // when set, replaces the API entirely
	// pageSize is the range page the fake answers without ?limit= (0:
	// 1,000, as the server); noPages answers every key in one page
	// without "more", as servers before pagination did.
	pageSize int
	noPages  bool
	// leaderHint, when set, is sent as LeaderHeader on every answer.
	leaderHint string
}

type fakeKV struct {
	value                []byte
	create, mod, version int64
}

type apiError struct {
	status      int
	code, msg   string
	modRevision int64
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, kvs: map[string]fakeKV{}}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/kv/{key...}", f.put)
	mux.HandleFunc("GET /v1/kv/{key...}", f.get)
	mux.HandleFunc("DELETE /v1/kv/{key...}", f.del)
	mux.HandleFunc("GET /v1/cluster", f.cluster)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/kvstream" {
			// The fake is HTTP only, as a controller before the KV stream:
			// the client's calls come as HTTP requests (kvstream_test.go
			// has the stream's own fakes).
			http.NotFound(w, r)
			return
		}
		f.hits.Add(1)
		f.mu.Lock()
		f.lastReq = r.Clone(r.Context())
		fail, h := f.failWith, f.handler
		if f.leaderHint != "" {
			w.Header().Set(LeaderHeader, f.leaderHint)
		}
		f.mu.Unlock()
		if h != nil {
			h.ServeHTTP(w, r)
			return
		}
		if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
			writeErr(w, apiError{status: 401, code: "unauthorized", msg: "missing or wrong bearer token"})
			return
		}
		if fail != nil {
			writeErr(w, *fail)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) URL() string { return f.srv.URL }

func (f *fakeAPI) setFail(e *apiError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWith = e
}

func (f *fakeAPI) last() (*http.Request, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastReq, f.lastKey
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, e apiError) {
	body := map[string]any{"error": e.msg, "code": e.code}
	if e.code == "compare_failed" {
		body["mod_revision"] = e.modRevision
	}
	writeJSON(w, e.status, body)
}

func (f *fakeAPI) put(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	val, err := io.ReadAll(r.Body)
	if err != nil {
		writeErr(w, apiError{status: 400, code: "bad_request", msg: err.Error()})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastKey = key
	cur, exists := f.kvs[key]
	if p := r.URL.Query().Get("prev_revision"); p != "" {
		want, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			writeErr(w, apiError{status: 400, code: "bad_request", msg: "bad prev_revision"})
			return
		}
		if cur.mod != want {
			writeErr(w, apiError{status: 409, code: "compare_failed", msg: "compare failed", modRevision: cur.mod})
			return
		}
	}
	f.rev++
	kv := fakeKV{value: val, create: cur.create, mod: f.rev, version: cur.version + 1}
	if !exists {
		kv.create, kv.version = f.rev, 1
	}
	f.kvs[key] = kv
	writeJSON(w, 200, map[string]any{"revision": f.rev})
}

func (f *fakeAPI) kvJSON(key string, kv fakeKV, b64 bool) map[string]any {
	m := map[string]any{"key": key, "value": string(kv.value), "create_revision": kv.create,
		"mod_revision": kv.mod, "version": kv.version}
	if b64 {
		m["value"] = base64.StdEncoding.EncodeToString(kv.value)
	}
	return m
}

func (f *fakeAPI) get(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	q := r.URL.Query()
	b64 := q.Get("encoding") == "base64"
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastKey = key
	if q.Get("prefix") == "true" {
		var keys []string
		for k := range f.kvs {
			if strings.HasPrefix(k, key) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		if f.noPages {
			out := []map[string]any{}
			for _, k := range keys {
				out = append(out, f.kvJSON(k, f.kvs[k], b64))
			}
			writeJSON(w, 200, map[string]any{"kvs": out, "revision": f.rev})
			return
		}
		limit := f.pageSize
		if limit == 0 {
			limit = 1000
		}
		if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 {
			limit = l
		}
		after := q.Get("after")
		out := []map[string]any{}
		ans := map[string]any{"revision": f.rev}
		for _, k := range keys {
			if after != "" && k <= after {
				continue
			}
			if len(out) == limit {
				ans["more"], ans["next"] = true, out[len(out)-1]["key"]
				break
			}
			out = append(out, f.kvJSON(k, f.kvs[k], b64))
		}
		ans["kvs"] = out
		writeJSON(w, 200, ans)
		return
	}
	kv, ok := f.kvs[key]
	if !ok {
		writeErr(w, apiError{status: 404, code: "not_found", msg: "key " + strconv.Quote(key) + " not found"})
		return
	}
	m := f.kvJSON(key, kv, b64)
	m["revision"] = f.rev
	writeJSON(w, 200, m)
}

func (f *fakeAPI) del(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastKey = key
	deleted := 0
	if _, ok := f.kvs[key]; ok {
		delete(f.kvs, key)
		f.rev++
		deleted = 1
	}
	writeJSON(w, 200, map[string]any{"revision": f.rev, "deleted": deleted})
}

func (f *fakeAPI) cluster(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{
		"cluster_id": "c-123", "leader_id": 2, "term": 7, "commit_index": 100, "applied_index": 99,
		"controllers": []map[string]any{
			{"id": 1, "address": "127.0.0.1:7001", "role": "follower", "match_index": 98, "reachable": true},
			{"id": 2, "address": "127.0.0.1:7002", "role": "leader", "match_index": 100, "reachable": true},
			{"id": 3, "address": "127.0.0.1:7003", "role": "follower", "match_index": 0, "reachable": false},
		},
	})
}
