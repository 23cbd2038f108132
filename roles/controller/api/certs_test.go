package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

func TestCertRevoke(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct{ body, code string }{
		{`{"serial": "xyz"}`, "bad_request"},
		{`{"serial": "1f", "worker": "w1"}`, "bad_request"},
		{`{}`, "bad_request"},
		{`{"worker": "w1", "at_ms": 5}`, "bad_request"},
		{`{"worker": "w1", "extra": 1}`, "bad_request"},
		{`not json`, "bad_request"},
	} {
		rec := f.do("POST", "/v1/certs/revoke", tc.body)
		requireAnswer(t, rec, http.StatusBadRequest, tc.code)
	}
	require.Empty(t, f.store.state.Revocations(), "a refused request changed the deny-list")

	rec := f.do("POST", "/v1/certs/revoke", `{"serial": "1f", "reason": "stolen"}`) // spelled as the deny-list keeps it: 1F
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = f.do("POST", "/v1/certs/revoke", `{"worker": "w1"}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	_, ok := f.store.state.Revoked("1F", "")
	require.True(t, ok)

	rec = f.do("GET", "/v1/certs/revoked", "")
	require.Equal(t, http.StatusOK, rec.Code)
	got := jsonBody(t, rec)["revoked"].([]any)
	require.Len(t, got, 2)
	require.Equal(t, "1F", got[0].(map[string]any)["serial"])
	require.Equal(t, "stolen", got[0].(map[string]any)["reason"])
	require.Equal(t, "w1", got[1].(map[string]any)["worker"])
	require.Len(t, f.store.state.Revocations(), 2)
	require.Equal(t, metadata.Revocation{Worker: "w1", AtMS: f.store.state.Revocations()[1].AtMS}, f.store.state.Revocations()[1])
}
