package api

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// FuzzStreamRequest checks the KV stream's frame decoder never panics, and
// that what it accepts is within the HTTP routes' bounds.
func FuzzStreamRequest(f *testing.F) {
	f.Add(streamFrame(1, streamPut, 0, "k", []byte("v"))[4:])
	f.Add(streamFrame(2, streamPut, streamHasPrev, "k", i64(3), []byte("v"))[4:])
	f.Add(streamFrame(3, streamGet, streamSerializable, "a/b")[4:])
	f.Add(streamFrame(4, streamDelete, 0, "k")[4:])
	f.Add(streamFrame(5, 7, 0, "")[4:])
	f.Add([]byte{0, 0, 0, 1, 1, 0, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeStreamReq(b)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status/100 != 4 {
				t.Fatalf("a bad frame must be a 4xx, got %v", err)
			}
			return
		}
		if len(req.Value) > MaxValueBytes || len(req.Key) > len(b) || req.Prev < 0 {
			t.Fatalf("accepted %+v", req)
		}
		if req.Op != streamPut && req.Op != streamGet && req.Op != streamDelete {
			t.Fatalf("accepted op %d", req.Op)
		}
	})
}

// FuzzKVStreamBytes feeds arbitrary bytes to a live KV stream: it never
// panics, every answer is a well-formed frame, and the state changes only
// by the puts answered 200 and the deletes that deleted.
func FuzzKVStreamBytes(f *testing.F) {
	var many []byte
	for i := range 5 {
		many = append(many, streamFrame(uint32(i), streamPut, 0, "k", []byte("v"))...)
	}
	f.Add(many)
	f.Add(append(streamFrame(1, streamDelete, 0, "k"), streamFrame(2, streamGet, 0, "k")...))
	f.Add(streamFrame(1, streamPut, streamHasPrev, "k", i64(0), []byte("v")))
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 1, 0, 0, 1})
	f.Add([]byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, in []byte) {
		fx := newFixture(t)
		server, client := net.Pipe()
		answers := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(client)
			answers <- b
		}()
		req := httptest.NewRequest("GET", "/v1/kvstream", nil)
		req.Pattern = "GET /v1/kvstream"
		fx.srv.newKVStream(server, req).serve(bufio.NewReader(bytes.NewReader(in)))
		out := <-answers
		writes := 0
		for len(out) > 0 {
			if len(out) < 4+7 {
				t.Fatalf("a truncated answer: %x", out)
			}
			n := int(binary.BigEndian.Uint32(out))
			if n < 7 || n > len(out)-4 {
				t.Fatalf("answer length %d of %d bytes", n, len(out)-4)
			}
			status := binary.BigEndian.Uint16(out[8:])
			body := out[4+7+int(out[10]) : 4+n]
			switch {
			case status == http.StatusOK && len(body) == 8: // a put
				writes++
			case status == http.StatusOK && len(body) == 16: // a delete: a new revision if it deleted
				if binary.BigEndian.Uint64(body[8:]) > 0 {
					writes++
				}
			case status == http.StatusOK:
			case !json.Valid(body):
				t.Fatalf("status %d with a body that is not JSON: %q", status, body)
			}
			out = out[4+n:]
		}
		if got := fx.store.state.Revision(); got != int64(writes) {
			t.Fatalf("revision %d after %d writes answered 200", got, writes)
		}
	})
}
