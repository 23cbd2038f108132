package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLeaderHint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		leader uint64
		addrs  map[uint64]string
		want   string
	}{
		{"a follower names the leader", 2, map[uint64]string{2: "10.0.0.2:8080"}, "10.0.0.2:8080"},
		{"the leader names no one", 1, map[uint64]string{1: "10.0.0.1:8080"}, ""},
		{"no leader known", 0, map[uint64]string{2: "10.0.0.2:8080"}, ""},
		{"the leader's address unknown", 2, map[uint64]string{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(f *fixture) { f.cluster.leader, f.cluster.httpAddrs = tc.leader, tc.addrs })
			// On answers of every kind: a read, a refusal, an unknown route.
			for _, rec := range []interface{ Result() *http.Response }{
				f.do("GET", "/healthz", ""),
				f.do("PUT", "/v1/kv/", "x"),
				f.do("GET", "/no/such/route", ""),
			} {
				require.Equal(t, tc.want, rec.Result().Header.Get(LeaderHeader))
			}
		})
	}
}
