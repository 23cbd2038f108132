package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Controllers send each other HTTP over the cluster link: the request
// reaches the controller the URL names, a server with another node's
// certificate is refused, a worker certificate cannot use the protocol, and
// nothing but a PeerURL is dialled.
func TestPeerHTTPOverTheClusterLink(t *testing.T) {
	t.Parallel()
	caDir, bs := clusterWithCA(t, 2)
	a := startNode(t, 1, bs[0], "", "")
	b := startNode(t, 2, bs[1], "", "")
	ln, err := b.q.ListenStreams(ALPNPeerHTTP)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "node 2 got "+r.URL.Path+" with "+r.Header.Get("Authorization"))
	})}
	go func() { _ = srv.Serve(NetListener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	bAddr := b.q.Addr().String()

	dialedAs := func(expect uint64) *http.Client {
		return &http.Client{Timeout: waitFor, Transport: NewPeerRoundTripper(func(ctx context.Context, node uint64) (Stream, error) {
			require.Equal(t, expect, node)
			return a.q.DialPeerHTTP(ctx, node, bAddr)
		})}
	}
	req, err := http.NewRequest("GET", PeerURL(2)+"/v1/kv/x", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := dialedAs(2).Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "node 2 got /v1/kv/x with Bearer t", string(body))

	// Node 2's address dialled as node 3: its certificate names another node.
	_, err = dialedAs(3).Get(PeerURL(3) + "/x")
	require.Error(t, err)
	require.Equal(t, 1.0, rejectedCount(t, a.reg, RejectWrongNode))

	// Only PeerURLs: a plain address never leaves the process.
	_, err = dialedAs(2).Get("http://127.0.0.1:1/x")
	require.ErrorContains(t, err, "not a controller URL")

	// A worker certificate may not ask controllers over this protocol.
	worker := issueBundle(t, caDir, RoleWorker, "w-1")
	requireRefusedAtHandshake(t, dialRefused(t, bAddr, worker.ClientConfig(ALPNPeerHTTP)))
	require.Equal(t, 1.0, rejectedCount(t, b.reg, RejectWrongRole))
}

func TestPeerNode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"controller-2.corral:80": 2, "controller-18446744073709551615.corral": 1<<64 - 1} {
		got, err := peerNode(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
	for _, in := range []string{"controller-0.corral:80", "controller-02.corral:80", "controller-2:80", "node-2.corral:80", "127.0.0.1:80", ""} {
		_, err := peerNode(in)
		require.Error(t, err, in)
	}
	require.False(t, errors.Is(nil, ErrListenerClosed))
}
