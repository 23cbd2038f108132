package cli

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
	"testing"
)

// fakeAPI is a minimal in-memory imitation of the corral HTTP API, enough to exercise the client commands'
// argument handling and output without starting a controller.
type fakeAPI struct {
	mu  sync.Mutex
	rev int64
	kvs map[string]fakeKV
	// cluster is served as the GET /v1/cluster answer.
	cluster map[string]any
	// pageSize is the range page the fake answers (0: 1,000, as the
	// server), with "more" and "next" when keys remain.
	pageSize int
}

type fakeKV struct {
	value    []byte
	mod      int64
	create   int64
	versions int64
}

func newFakeAPI(t *testing.T) (*fakeAPI, string) {
	t.Helper()
	f := &fakeAPI{kvs: map[string]fakeKV{}, cluster: map[string]any{
		"cluster_id": "test-cluster", "leader_id": 1, "term": 3, "commit_index": 120, "applied_index": 120,
		"controllers": []map[string]any{
			{"id": 1, "address": "127.0.0.1:7001", "role": "leader", "match_index": 120, "reachable": true},
			{"id": 2, "address": "127.0.0.1:7002", "role": "follower", "match_index": 118, "reachable": true},
			{"id": 3, "address": "127.0.0.1:7003", "role": "follower", "match_index": 0, "reachable": false},
		},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/kv/{key...}", f.put)
	mux.HandleFunc("GET /v1/kv/{key...}", f.get)
	mux.HandleFunc("DELETE /v1/kv/{key...}", f.del)
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, f.cluster)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPI) put(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	val, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, exists := f.kvs[key]
	if p := r.URL.Query().Get("prev_revision"); p != "" {
		want, _ := strconv.ParseInt(p, 10, 64)
		if cur.mod != want {
			writeJSON(w, 409, map[string]any{"error": "compare failed", "code": "compare_failed", "mod_revision": cur.mod})
			return
		}
	}
	f.rev++
	kv := fakeKV{value: val, mod: f.rev, create: cur.create, versions: cur.versions + 1}
	if !exists {
		kv.create = f.rev
	}
	f.kvs[key] = kv
	writeJSON(w, 200, map[string]any{"revision": f.rev})
}

func (f *fakeAPI) kvJSON(k string, kv fakeKV) map[string]any {
	return map[string]any{"key": k, "value": base64.StdEncoding.EncodeToString(kv.value), "encoding": "base64",
		"create_revision": kv.create, "mod_revision": kv.mod, "version": kv.versions}
}

func (f *fakeAPI) get(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Query().Get("prefix") == "true" {
		var keys []string
		for k := range f.kvs {
			if strings.HasPrefix(k, key) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		limit := f.pageSize
		if limit == 0 {
			limit = 1000
		}
		after := r.URL.Query().Get("after")
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
			out = append(out, f.kvJSON(k, f.kvs[k]))
		}
		ans["kvs"] = out
		writeJSON(w, 200, ans)
		return
	}
	kv, ok := f.kvs[key]
	if !ok {
		writeJSON(w, 404, map[string]any{"error": "key " + strconv.Quote(key) + " not found", "code": "not_found"})
		return
	}
	writeJSON(w, 200, f.kvJSON(key, kv))
}

func (f *fakeAPI) del(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	f.mu.Lock()
	defer f.mu.Unlock()
	deleted := 0
	if _, ok := f.kvs[key]; ok {
		delete(f.kvs, key)
		f.rev++
		deleted = 1
	}
	writeJSON(w, 200, map[string]any{"revision": f.rev, "deleted": deleted})
}
