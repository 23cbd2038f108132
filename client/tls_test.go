package client

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// https:// endpoints are verified against Config.CACert.
func TestClient_HTTPSWithCACert(t *testing.T) {
	f := newFakeAPI(t)
	ts := httptest.NewUnstartedServer(f.srv.Config.Handler)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	ctx := context.Background()

	c, err := New(Config{Endpoints: []string{ts.URL}, CACert: caPEM})
	require.NoError(t, err)
	_, err = c.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)
	kv, err := c.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(kv.Value))

	untrusting, err := New(Config{Endpoints: []string{ts.URL}})
	require.NoError(t, err)
	_, err = untrusting.Get(ctx, "k")
	require.ErrorContains(t, err, "certificate signed by unknown authority")

	_, err = New(Config{Endpoints: []string{ts.URL}, CACert: []byte("not pem")})
	require.ErrorIs(t, err, ErrBadCACert)
}
