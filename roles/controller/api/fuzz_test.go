package api

import (
	"errors"
	"net/http"
	"testing"
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
