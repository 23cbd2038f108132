package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

// refusedEndpoint returns an http:// endpoint on which nothing listens, so dialing it fails fast.
func refusedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr
}

func TestKVRoundTrip(t *testing.T) {
	f := newFakeAPI(t)
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	ctx := context.Background()

	rev, err := c.Put(ctx, "a/b", []byte("v1"))
	require.NoError(t, err)
	require.EqualValues(t, 1, rev)

	// Values are binary-safe: invalid UTF-8 and NUL survive because the client asks for base64.
	bin := []byte{0xff, 0x00, 0xfe, 'x'}
	rev, err = c.Put(ctx, "a/c", bin)
	require.NoError(t, err)
	require.EqualValues(t, 2, rev)

	kv, err := c.Get(ctx, "a/c")
	require.NoError(t, err)
	require.Equal(t, KV{Key: "a/c", Value: bin, CreateRevision: 2, ModRevision: 2, Version: 1}, *kv)
	req, _ := f.last()
	require.Equal(t, "base64", req.URL.Query().Get("encoding"))
	require.Empty(t, req.URL.Query().Get("consistency"))

	_, err = c.Get(ctx, "a/c", Serializable())
	require.NoError(t, err)
	req, _ = f.last()
	require.Equal(t, "serializable", req.URL.Query().Get("consistency"))

	rev, err = c.CompareAndPut(ctx, "a/b", []byte("v2"), 1)
	require.NoError(t, err)
	require.EqualValues(t, 3, rev)

	_, err = c.CompareAndPut(ctx, "a/b", []byte("v3"), 1)
	require.ErrorIs(t, err, ErrCompareFailed)
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	require.EqualValues(t, 3, apiErr.ModRevision)
	require.Equal(t, http.StatusConflict, apiErr.Status)

	// prev_revision=0 means "only if absent".
	_, err = c.CompareAndPut(ctx, "a/new", []byte("x"), 0)
	require.NoError(t, err)
	_, err = c.CompareAndPut(ctx, "a/new", []byte("y"), 0)
	require.ErrorIs(t, err, ErrCompareFailed)

	kvs, listRev, err := c.List(ctx, "a/")
	require.NoError(t, err)
	require.EqualValues(t, 4, listRev)
	require.Len(t, kvs, 3)
	require.Equal(t, []string{"a/b", "a/c", "a/new"}, []string{kvs[0].Key, kvs[1].Key, kvs[2].Key})
	require.Equal(t, []byte("v2"), kvs[0].Value)
	require.EqualValues(t, 2, kvs[0].Version)
	req, _ = f.last()
	require.Equal(t, "true", req.URL.Query().Get("prefix"))

	rev, deleted, err := c.Delete(ctx, "a/b")
	require.NoError(t, err)
	require.EqualValues(t, 5, rev)
	require.EqualValues(t, 1, deleted)
	_, deleted, err = c.Delete(ctx, "a/b")
	require.NoError(t, err)
	require.EqualValues(t, 0, deleted)

	_, err = c.Get(ctx, "a/b")
	require.ErrorIs(t, err, ErrNotFound)
	require.NotErrorIs(t, err, ErrCompareFailed)

	// An empty value is a value, not a missing body.
	_, err = c.Put(ctx, "empty", nil)
	require.NoError(t, err)
	kv, err = c.Get(ctx, "empty")
	require.NoError(t, err)
	require.Empty(t, kv.Value)
}

func TestCluster(t *testing.T) {
	f := newFakeAPI(t)
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	st, err := c.Cluster(context.Background())
	require.NoError(t, err)
	require.Equal(t, "c-123", st.ClusterID)
	require.EqualValues(t, 2, st.LeaderID)
	require.EqualValues(t, 7, st.Term)
	require.EqualValues(t, 100, st.CommitIndex)
	require.EqualValues(t, 99, st.AppliedIndex)
	require.Len(t, st.Controllers, 3)
	require.Equal(t, Controller{ID: 3, Address: "127.0.0.1:7003", Role: "follower"}, st.Controllers[2])
	require.True(t, st.Controllers[1].Reachable)
}

func TestKeyPath(t *testing.T) {
	tests := []struct{ key, want string }{
		{"a", "/v1/kv/a"},
		{"a/b/c", "/v1/kv/a/b/c"},
		{"", "/v1/kv/"},
		{"sp ace/q?#%", "/v1/kv/sp%20ace/q%3F%23%25"},
		{"a/../b", "/v1/kv/a/%2E%2E/b"},
		{"./x", "/v1/kv/%2E/x"},
		{"a//b", "/v1/kv/a%2F%2Fb"},
		{"/lead", "/v1/kv/%2Flead"},
		{"trail/", "/v1/kv/trail%2F"},
		{"ünï/コード", "/v1/kv/%C3%BCn%C3%AF/%E3%82%B3%E3%83%BC%E3%83%89"},
		{"a.b/...", "/v1/kv/a.b/..."},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, keyPath(tt.key), "key %q", tt.key)
	}
}

// TestKeyEscapingRoundTrip sends awkward keys through a real ServeMux with a {key...} wildcard: the server must see
// exactly the key the client was given, with no path-cleaning redirect in between.
func TestKeyEscapingRoundTrip(t *testing.T) {
	f := newFakeAPI(t)
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	ctx := context.Background()
	keys := []string{
		"plain", "a/b/c", "sp ace", "q?x=1#frag", "100%", "a/../b", "./x", "a/./b", "a//b", "/lead", "trail/",
		"/", "ünï/コード", "+plus&amp=;", "..", "back\\slash", "tab\tnew\nline",
	}
	for _, k := range keys {
		_, err := c.Put(ctx, k, []byte("v:"+k))
		require.NoError(t, err, "put %q", k)
		_, seen := f.last()
		require.Equal(t, k, seen, "server saw a different key for put %q", k)
		kv, err := c.Get(ctx, k)
		require.NoError(t, err, "get %q", k)
		require.Equal(t, k, kv.Key)
		require.Equal(t, "v:"+k, string(kv.Value))
		_, deleted, err := c.Delete(ctx, k)
		require.NoError(t, err, "delete %q", k)
		require.EqualValues(t, 1, deleted, "delete %q", k)
	}
}

func TestBearerToken(t *testing.T) {
	f := newFakeAPI(t)
	f.token = "s3cret"

	c := newTestClient(t, Config{Endpoints: []string{f.URL()}, Token: "s3cret"})
	_, err := c.Put(context.Background(), "k", []byte("v"))
	require.NoError(t, err)
	req, _ := f.last()
	require.Equal(t, "Bearer s3cret", req.Header.Get("Authorization"))

	anon := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	_, err = anon.Get(context.Background(), "k")
	require.ErrorIs(t, err, ErrUnauthorized)
	req, _ = f.last()
	require.Empty(t, req.Header.Get("Authorization"))
}

func TestErrorMapping(t *testing.T) {
	sentinels := []error{ErrNotFound, ErrCompareFailed, ErrNoLeader, ErrNotReady, ErrTimeout, ErrUnauthorized,
		ErrBadRequest, ErrTooLarge}
	tests := []struct {
		status int
		code   string
		want   error
	}{
		{400, "bad_request", ErrBadRequest},
		{401, "unauthorized", ErrUnauthorized},
		{404, "not_found", ErrNotFound},
		{409, "compare_failed", ErrCompareFailed},
		{413, "too_large", ErrTooLarge},
		{503, "no_leader", ErrNoLeader},
		{503, "timeout", ErrTimeout},
		{503, "not_ready", ErrNotReady},
		{500, "internal", nil},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			f := newFakeAPI(t)
			f.setFail(&apiError{status: tt.status, code: tt.code, msg: "because " + tt.code, modRevision: 42})
			// Leaderless answers are retried until the deadline: keep it short.
			c := newTestClient(t, Config{Endpoints: []string{f.URL()}, Timeout: 300 * time.Millisecond})
			_, err := c.Put(context.Background(), "k", []byte("v"))
			require.Error(t, err)
			var apiErr *Error
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tt.status, apiErr.Status)
			require.Equal(t, tt.code, apiErr.Code)
			require.Equal(t, "because "+tt.code, apiErr.Message)
			require.Contains(t, err.Error(), "because "+tt.code)
			for _, s := range sentinels {
				require.Equal(t, s == tt.want, errors.Is(err, s), "errors.Is(%v, %v)", err, s)
			}
		})
	}
}

func TestNonJSONErrorBody(t *testing.T) {
	f := newFakeAPI(t)
	f.handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	})
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}})
	_, err := c.Get(context.Background(), "k")
	var apiErr *Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadGateway, apiErr.Status)
	require.Empty(t, apiErr.Code)
	require.Contains(t, apiErr.Message, "bad gateway")
	require.NotErrorIs(t, err, ErrNotFound)
}

func TestFailoverOnDialError(t *testing.T) {
	good := newFakeAPI(t)
	c := newTestClient(t, Config{Endpoints: []string{refusedEndpoint(t), good.URL()}})
	for i := 0; i < 3; i++ {
		_, err := c.Put(context.Background(), "k", []byte("v"))
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, good.hits.Load())
	require.EqualValues(t, 1, c.preferred.Load(), "the endpoint that answered is remembered")
}

func TestFailoverOnNoLeaderAndNotReady(t *testing.T) {
	for _, code := range []string{"no_leader", "not_ready", "acl_changed"} {
		t.Run(code, func(t *testing.T) {
			bad, good := newFakeAPI(t), newFakeAPI(t)
			bad.setFail(&apiError{status: 503, code: code, msg: "try elsewhere"})
			c := newTestClient(t, Config{Endpoints: []string{bad.URL(), good.URL()}})
			for i := 0; i < 3; i++ {
				_, err := c.Put(context.Background(), "k", []byte("v"))
				require.NoError(t, err)
			}
			require.EqualValues(t, 1, bad.hits.Load(), "later calls start at the endpoint that worked")
			require.EqualValues(t, 3, good.hits.Load())
		})
	}
}

func TestNoFailoverOnTimeout(t *testing.T) {
	bad, good := newFakeAPI(t), newFakeAPI(t)
	bad.setFail(&apiError{status: 503, code: "timeout", msg: "proposal timed out"})
	c := newTestClient(t, Config{Endpoints: []string{bad.URL(), good.URL()}})
	_, err := c.Put(context.Background(), "k", []byte("v"))
	require.ErrorIs(t, err, ErrTimeout)
	require.EqualValues(t, 0, good.hits.Load(), "a write with unknown outcome must not be resent")
}

func TestNoFailoverAfterRequestSent(t *testing.T) {
	bad, good := newFakeAPI(t), newFakeAPI(t)
	// The server reads the request and drops the connection without answering: the write may have happened.
	bad.handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	c := newTestClient(t, Config{Endpoints: []string{bad.URL(), good.URL()}})
	_, err := c.Put(context.Background(), "k", []byte("v"))
	require.Error(t, err)
	require.EqualValues(t, 0, good.hits.Load())
}

func TestAllEndpointsFail(t *testing.T) {
	a, b := newFakeAPI(t), newFakeAPI(t)
	a.setFail(&apiError{status: 503, code: "no_leader", msg: "no leader"})
	b.setFail(&apiError{status: 503, code: "no_leader", msg: "no leader"})
	refused := refusedEndpoint(t)
	c := newTestClient(t, Config{Endpoints: []string{a.URL(), refused, b.URL()}})
	_, err := c.Get(context.Background(), "k")
	require.ErrorIs(t, err, ErrNoLeader)
	require.Contains(t, err.Error(), refused)
	require.EqualValues(t, 1, a.hits.Load())
	require.EqualValues(t, 1, b.hits.Load())

	only := newTestClient(t, Config{Endpoints: []string{refused}})
	_, err = only.Get(context.Background(), "k")
	require.Error(t, err)
	require.Contains(t, err.Error(), "connect to "+refused)
}

func TestTimeoutAndCancel(t *testing.T) {
	f := newFakeAPI(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) }) // runs before the server's Close, which waits for this handler
	f.handler = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// Reading the body to EOF lets the server notice the client hanging up (r.Context() is then cancelled).
		_, _ = io.Copy(io.Discard, r.Body)
		select { // never answers
		case <-r.Context().Done():
		case <-stop:
		}
	})
	c := newTestClient(t, Config{Endpoints: []string{f.URL()}, Timeout: 50 * time.Millisecond})
	_, err := c.Put(context.Background(), "k", []byte("v"))
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	slow := newTestClient(t, Config{Endpoints: []string{f.URL()}, Timeout: -1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = slow.Get(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrTimeout)
}

func TestNewValidation(t *testing.T) {
	_, err := New(Config{})
	require.ErrorContains(t, err, "no endpoints")
	for _, bad := range []string{"", "ftp://x", "http://", "http://h:1/?q=1", "http://u:p@h:1"} {
		_, err := New(Config{Endpoints: []string{bad}})
		require.Error(t, err, "endpoint %q", bad)
	}
	c, err := New(Config{Endpoints: []string{"127.0.0.1:8080", "https://h:1/base/", " http://x:2 "}})
	require.NoError(t, err)
	require.Equal(t, []string{"http://127.0.0.1:8080", "https://h:1/base", "http://x:2"}, c.Endpoints())
	require.Equal(t, DefaultTimeout, c.timeout)
}

func TestErrorString(t *testing.T) {
	e := &Error{Status: 404, Code: "not_found", Message: `key "k" not found`}
	require.Equal(t, `corral API: key "k" not found (HTTP 404, code not_found)`, e.Error())
	e = &Error{Status: 502}
	require.True(t, strings.HasPrefix(e.Error(), "corral API: Bad Gateway"))
}

func TestRetriesWhileNoEndpointHasALeader(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"election under way","code":"no_leader"}`))
			return
		}
		_, _ = w.Write([]byte(`{"revision":7}`))
	}))
	defer srv.Close()
	c := newTestClient(t, Config{Endpoints: []string{srv.URL}, Timeout: 5 * time.Second})
	rev, err := c.Put(context.Background(), "k", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 7, rev)
	require.EqualValues(t, 4, calls.Load())
}
