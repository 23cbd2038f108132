package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/corral-dev/corral/metadata"
)

// keepAliveSeeds are request bodies and stream lines, good and bad.
var keepAliveSeeds = []string{
	`{"ids": [1, 2, 3]}`, `{"ids": []}`, `{"ids": [1], "x": 1}`, `{"ids": [1]} {}`, `{"ids": "1"}`,
	`{"ids": [9223372036854775807, -1, 0]}`, `{"ids": [1.5]}`, `null`, ``, `[`, `{"IDS": [4]}`,
}

// FuzzKeepAliveLine checks the keep-alive stream's line decoder never
// panics, and that what it accepts is a batch the leader may refresh.
func FuzzKeepAliveLine(f *testing.F) {
	for _, s := range keepAliveSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ids, err := keepAliveLine(line)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
				t.Fatalf("a bad line must be a 400, got %v", err)
			}
			return
		}
		if len(ids) == 0 || len(ids) > MaxKeepAliveBatch {
			t.Fatalf("accepted %d ids", len(ids))
		}
	})
}

// FuzzKeepAliveBatch posts arbitrary bodies to POST /v1/leases/keepalive:
// the answer is a JSON 200 or 400, never a panic or another status.
func FuzzKeepAliveBatch(f *testing.F) {
	for _, s := range keepAliveSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fx := newFixture(t, func(fx *fixture) { fx.coord.alive[1] = 1000 })
		rec := fx.do("POST", "/v1/leases/keepalive", body)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		jsonBody(t, rec)
	})
}

// FuzzACLBodies sends arbitrary policy and token bodies, as the network
// could, to a bootstrapped cluster: each is answered 2xx or 4xx (never
// 5xx, never a panic), and what was applied leaves a state whose snapshot
// restores (its ACL check passes).
func FuzzACLBodies(f *testing.F) {
	for _, s := range []string{`{"rules": [{"resource": "kv", "prefix": "a/", "access": "read"}]}`,
		`{"name": "t", "policies": ["p"]}`, `{"name": "m", "type": "management"}`, `{"rules": []}`,
		`{"rules": [{"resource": "operator", "prefix": "x", "access": "write"}]}`, `{"name": "t", "policies": ["p"], "ttl": "1s"}`, `[]`, `{`} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, policy, token string) {
		fx := newFixture(t)
		boot := fx.do("POST", "/v1/acl/bootstrap", "", "X-Corral-Client", "fuzz")
		if boot.Code != http.StatusCreated {
			t.Fatalf("bootstrap: %d %s", boot.Code, boot.Body)
		}
		var root struct {
			Secret string `json:"secret"`
		}
		if err := json.Unmarshal(boot.Body.Bytes(), &root); err != nil {
			t.Fatal(err)
		}
		hdr := []string{"X-Corral-Client", "fuzz", "Content-Type", "application/json", "Authorization", "Bearer " + root.Secret}
		for _, req := range []struct{ method, path, body string }{
			{"PUT", "/v1/acl/policies/p", policy}, {"POST", "/v1/acl/tokens", token},
		} {
			rec := fx.do(req.method, req.path, req.body, hdr...)
			if rec.Code >= 500 || rec.Code >= 300 && rec.Code < 400 {
				t.Fatalf("%s %s %q: status %d: %s", req.method, req.path, req.body, rec.Code, rec.Body)
			}
		}
		snap, err := fx.store.State().Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := metadata.Restore(snap); err != nil {
			t.Fatalf("the applied ACL state does not restore: %v", err)
		}
	})
}
