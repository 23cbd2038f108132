package transport

// Tests of what corral's quic-go patch (third_party/quic-go/CORRAL.md)
// changes beyond acknowledgement timing (that is ackdelay_test.go).

import (
	"context"
	"crypto/tls"
	"os"
	"testing"
	"time"

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

// A QUIC stream reuses one timer for every Read that waits with a deadline
// (third_party/quic-go, CORRAL.patch): a deadline that fires must still
// fail that Read, and must not disturb the Reads after it.
func TestQUICStream_ReadDeadlineFiresAndTheStreamStillReads(t *testing.T) {
	ctrl, _, bundles := startWorkerEcho(t)
	c := dialWorkerStream(t, bundles[1], ctrl.q.Addr().String())
	for i := range 3 {
		_, err := readWithin(t, c, 1, 20*time.Millisecond) // the echo has nothing to send
		require.ErrorIs(t, err, os.ErrDeadlineExceeded, "read %d", i)
		_, err = c.Write([]byte{byte('a' + i)})
		require.NoError(t, err)
		got, err := readWithin(t, c, 1, waitFor)
		require.NoError(t, err, "read %d", i)
		require.Equal(t, []byte{byte('a' + i)}, got)
	}
}
