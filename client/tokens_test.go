package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJoinTokens(t *testing.T) {
	f := newFakeAPI(t)
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	tok := JoinToken{ID: "0123456789abcdef", Role: "worker", Uses: 2, UsesLeft: 2, State: "live",
		CreatedAt: "2030-01-01T00:00:00Z", ExpiresAt: "2030-01-01T02:00:00Z"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tokens", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
		writeJSON(w, http.StatusCreated, NewJoinToken{JoinToken: tok, Token: "corral-join-0123456789abcdef.00"})
	})
	mux.HandleFunc("GET /v1/tokens", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": []JoinToken{tok}})
	})
	mux.HandleFunc("DELETE /v1/tokens/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != tok.ID {
			writeErr(w, apiError{status: 404, code: "token_not_found", msg: "no join token " + r.PathValue("id")})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"revoked": tok.ID})
	})
	f.handler = mux
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	ctx := context.Background()

	nt, err := c.CreateJoinToken(ctx, "worker", 2*time.Hour, 2)
	require.NoError(t, err)
	require.Equal(t, NewJoinToken{JoinToken: tok, Token: "corral-join-0123456789abcdef.00"}, nt)
	_, err = c.CreateJoinToken(ctx, "worker", 0, 0)
	require.NoError(t, err)
	mu.Lock()
	require.Equal(t, []map[string]any{{"role": "worker", "ttl": "2h0m0s", "uses": 2.0}, {"role": "worker"}}, bodies,
		"zero ttl and uses are left to the server's defaults")
	mu.Unlock()

	list, err := c.JoinTokens(ctx)
	require.NoError(t, err)
	require.Equal(t, []JoinToken{tok}, list)

	require.NoError(t, c.RevokeJoinToken(ctx, tok.ID))
	err = c.RevokeJoinToken(ctx, "fedcba9876543210")
	require.ErrorIs(t, err, ErrTokenNotFound)
	require.ErrorContains(t, err, "no join token fedcba9876543210")
}

func TestJoinTokens_TooMany(t *testing.T) {
	f := newFakeAPI(t)
	f.setFail(&apiError{status: http.StatusConflict, code: "too_many_tokens", msg: "1000 join tokens are live"})
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	_, err := c.CreateJoinToken(context.Background(), "worker", time.Hour, 1)
	require.ErrorIs(t, err, ErrTooManyTokens)
}
