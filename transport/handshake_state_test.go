package transport

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"
)

// Both ends of a connection let go of crypto/tls's per-connection state
// once the handshake is confirmed (third_party/quic-go, CORRAL.patch: at
// thousands of worker sessions it is a large share of the leader's live
// heap). What a connection reports about its TLS session must not change
// with it, and the connection must keep working.
func TestQUICStreamListener_ConnectionStateOutlivesTheHandshakeState(t *testing.T) {
	bundles := clusterBundles(t, 2)
	ctrl := startNode(t, 1, bundles[0], "", "")
	l, err := ctrl.q.ListenStreams(ALPNWorker)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	c := dialWorkerStream(t, bundles[1], ctrl.q.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	s, err := l.Accept(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	// The first round trip confirms the handshake at the server. quic-go
	// updates the 1-RTT keys after its first 100 packets each way: going
	// well past that shows a key update needs nothing of crypto/tls.
	for round := range 150 {
		if round > 0 {
			_, err = c.Write([]byte("ping"))
			require.NoError(t, err)
		}
		got, err := readWithin(t, s, 4, waitFor)
		require.NoError(t, err, "round %d", round)
		require.Equal(t, "ping", string(got))
		_, err = s.Write([]byte("pong"))
		require.NoError(t, err)
		got, err = readWithin(t, c, 4, waitFor)
		require.NoError(t, err, "round %d", round)
		require.Equal(t, "pong", string(got))

		requireTLSState(t, s, bundles[1], "controller side, round %d", round)
		requireTLSState(t, c, bundles[0], "worker side, round %d", round)
	}
}

// requireTLSState checks what one end of a stream reports about its TLS
// session: TLS 1.3, the worker protocol, and the peer's certificate.
func requireTLSState(t *testing.T, s Stream, peer *TLSBundle, msg string, args ...any) {
	t.Helper()
	st := s.(*quicStream).conn.ConnectionState().TLS
	require.True(t, st.HandshakeComplete, append([]any{msg}, args...)...)
	require.Equal(t, uint16(tls.VersionTLS13), st.Version, append([]any{msg}, args...)...)
	require.Equal(t, ALPNWorker, st.NegotiatedProtocol, append([]any{msg}, args...)...)
	require.NotEmpty(t, st.PeerCertificates, append([]any{msg}, args...)...)
	require.Equal(t, peer.Cert.Certificate[0], st.PeerCertificates[0].Raw, append([]any{msg}, args...)...)
}
