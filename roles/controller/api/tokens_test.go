package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/fault"
)

func TestTokenCreate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct{ body, msg string }{
		{`{}`, `role "": join tokens admit workers only`},
		{`{"role": "controller"}`, "join tokens admit workers only"},
		{`{"role": "worker", "ttl": "59s"}`, "ttl 59s: want 1m0s to 720h0m0s"},
		{`{"role": "worker", "ttl": "721h"}`, "ttl 721h0m0s"},
		{`{"role": "worker", "ttl": "soon"}`, `ttl "soon" is not a duration`},
		{`{"role": "worker", "uses": 0}`, "uses 0: want 1 to 1000"},
		{`{"role": "worker", "uses": 1001}`, "uses 1001"},
		{`{"role": "worker", "secret": "mine"}`, "unknown field"},
		{`not json`, "body must be"},
	} {
		rec := f.do("POST", "/v1/tokens", tc.body)
		m := requireAnswer(t, rec, http.StatusBadRequest, "bad_request")
		require.Contains(t, m["error"], tc.msg, tc.body)
	}
	require.Empty(t, f.store.state.JoinTokens(), "a refused request made a token")

	before := time.Now()
	rec := f.do("POST", "/v1/tokens", `{"role": "worker", "ttl": "2h", "uses": 3}`)
	m := requireAnswer(t, rec, http.StatusCreated, "")
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"), "the answer holds a secret")
	tok := m["token"].(string)
	id, secret, err := metadata.ParseJoinToken(tok)
	require.NoError(t, err)
	require.Equal(t, id, m["id"])
	require.Equal(t, "worker", m["role"])
	require.EqualValues(t, 3, m["uses"])
	require.EqualValues(t, 3, m["uses_left"])
	require.Equal(t, "live", m["state"])
	exp, err := time.Parse(time.RFC3339, m["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(2*time.Hour), exp, 2*time.Second)

	// The state keeps the secret's hash, never the secret.
	snap, err := f.store.state.Snapshot()
	require.NoError(t, err)
	require.NotContains(t, string(snap), strings.TrimPrefix(tok, metadata.JoinTokenPrefix+id+"."))
	require.Contains(t, string(snap), metadata.JoinTokenSecretHash(secret))

	// Defaults: one use for an hour.
	rec = f.do("POST", "/v1/tokens", `{"role": "worker"}`)
	m = requireAnswer(t, rec, http.StatusCreated, "")
	require.EqualValues(t, 1, m["uses"])
	created, err := time.Parse(time.RFC3339, m["created_at"].(string))
	require.NoError(t, err)
	exp, err = time.Parse(time.RFC3339, m["expires_at"].(string))
	require.NoError(t, err)
	require.Equal(t, time.Hour, exp.Sub(created))

	// No quorum: nothing made, and the client is told to retry.
	f.store.err = fault.ErrNoLeader
	rec = f.do("POST", "/v1/tokens", `{"role": "worker"}`)
	requireAnswer(t, rec, http.StatusServiceUnavailable, "no_leader")
}

func TestTokenListAndRevoke(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rec := f.do("GET", "/v1/tokens", "")
	require.Equal(t, []any{}, requireAnswer(t, rec, http.StatusOK, "")["tokens"])

	var ids []string
	for range 2 {
		m := requireAnswer(t, f.do("POST", "/v1/tokens", `{"role": "worker", "uses": 2}`), http.StatusCreated, "")
		ids = append(ids, m["id"].(string))
	}
	// One expired long ago, one used up: the list tells them apart.
	past := time.Now().Add(-2 * time.Hour).UnixMilli()
	_, err := f.store.ProposePayload(t.Context(), metadata.OpJoinTokenCreate, metadata.JoinTokenCreate{
		ID: "00000000000000ee", SecretSHA256: strings.Repeat("a", 64), Role: "worker", Uses: 1, AtMS: past,
		ExpiresAtMS: past + time.Hour.Milliseconds()})
	require.NoError(t, err)

	rec = f.do("GET", "/v1/tokens", "")
	body := rec.Body.String()
	list := requireAnswer(t, rec, http.StatusOK, "")["tokens"].([]any)
	require.Len(t, list, 3)
	first := list[0].(map[string]any)
	require.Equal(t, "00000000000000ee", first["id"], "oldest first")
	require.Equal(t, "expired", first["state"])
	require.Equal(t, "live", list[1].(map[string]any)["state"])
	require.NotContains(t, body, "secret")
	require.NotContains(t, body, strings.Repeat("a", 64))
	require.NotContains(t, body, "corral-join-")

	rec = f.do("DELETE", "/v1/tokens/"+ids[0], "")
	require.Equal(t, ids[0], requireAnswer(t, rec, http.StatusOK, "")["revoked"])
	_, ok := f.store.state.JoinToken(ids[0])
	require.False(t, ok)
	requireAnswer(t, f.do("DELETE", "/v1/tokens/"+ids[0], ""), http.StatusNotFound, "token_not_found")
	requireAnswer(t, f.do("DELETE", "/v1/tokens/XYZ", ""), http.StatusBadRequest, "bad_request")
	list = requireAnswer(t, f.do("GET", "/v1/tokens?consistency=serializable", ""), http.StatusOK, "")["tokens"].([]any)
	require.Len(t, list, 2)
}

func TestTokenCreate_Full(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := time.Now().UnixMilli()
	for i := range metadata.MaxJoinTokens {
		id := fmt.Sprintf("%016x", i)
		_, err := f.store.ProposePayload(t.Context(), metadata.OpJoinTokenCreate, metadata.JoinTokenCreate{
			ID: id, SecretSHA256: strings.Repeat("b", 64), Role: "worker", Uses: 1, AtMS: now, ExpiresAtMS: now + time.Hour.Milliseconds()})
		require.NoError(t, err)
	}
	rec := f.do("POST", "/v1/tokens", `{"role": "worker"}`)
	m := requireAnswer(t, rec, http.StatusConflict, "too_many_tokens")
	require.Contains(t, m["error"], "corral token revoke")
}
