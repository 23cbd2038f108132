package client

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// host is a fake's HOST:PORT, as a controller announces it.
func host(f *fakeAPI) string { return strings.TrimPrefix(f.URL(), "http://") }

func TestLeaderHintMovesLaterCalls(t *testing.T) {
	follower, leader := newFakeAPI(t), newFakeAPI(t)
	follower.leaderHint = host(leader)
	c := newTestClient(t, Config{Endpoints: []string{follower.URL(), leader.URL()}})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		_, err := c.Put(ctx, "k", []byte("v"))
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, follower.hits.Load(), "the follower served the first call only")
	require.EqualValues(t, 2, leader.hits.Load(), "later calls start at the leader it named")
}

func TestLeaderHintOnARefusalMovesTheNextCall(t *testing.T) {
	follower, leader := newFakeAPI(t), newFakeAPI(t)
	follower.leaderHint = strings.ToUpper(host(leader)) // hosts compare without case
	follower.setFail(&apiError{status: 409, code: "compare_failed", msg: "revision moved"})
	c := newTestClient(t, Config{Endpoints: []string{follower.URL(), leader.URL()}})
	_, err := c.CompareAndPut(context.Background(), "k", []byte("v"), 7)
	require.ErrorIs(t, err, ErrCompareFailed)
	require.EqualValues(t, 0, leader.hits.Load(), "a refused call is never resent")
	_, err = c.Put(context.Background(), "k", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 1, leader.hits.Load())
}

func TestLeaderHintOutsideTheEndpointsIsIgnored(t *testing.T) {
	follower, other := newFakeAPI(t), newFakeAPI(t)
	follower.leaderHint = host(other) // a controller the operator did not list
	c := newTestClient(t, Config{Endpoints: []string{follower.URL()}})
	for i := 0; i < 2; i++ {
		_, err := c.Put(context.Background(), "k", []byte("v"))
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, follower.hits.Load())
	require.EqualValues(t, 0, other.hits.Load())
}

func TestEndpointHost(t *testing.T) {
	for ep, want := range map[string]string{
		"http://127.0.0.1:8081":       "127.0.0.1:8081",
		"https://Ctrl1.Example.com":   "ctrl1.example.com:443",
		"http://ctrl2":                "ctrl2:80",
		"http://[::1]:8080":           "[::1]:8080",
		"https://ctrl3.example:8443/": "ctrl3.example:8443",
	} {
		n, err := normalizeEndpoint(ep)
		require.NoError(t, err)
		require.Equal(t, want, endpointHost(n), ep)
	}
}
