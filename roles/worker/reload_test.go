package worker

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// ReloadTLS swaps the certificate later connections present and the
// expiry the worker exports; one for another identity is refused.
func TestWorker_ReloadTLS(t *testing.T) {
	t.Parallel()
	tlsDir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleWorker, "w-7", nil))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := Start(Config{DataDir: t.TempDir(), Controllers: []string{"127.0.0.1:1"}, TLSDir: tlsDir, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(w.Halt)
	first := w.tls.Leaf()
	requireExpiry := func(want float64) {
		t.Helper()
		mfs, err := w.Registry().Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == transport.CertExpiryMetric {
				require.Len(t, mf.GetMetric(), 1)
				m := mf.GetMetric()[0]
				require.Equal(t, "cert", m.GetLabel()[0].GetName())
				require.Equal(t, "node", m.GetLabel()[0].GetValue())
				require.Equal(t, want, m.GetGauge().GetValue())
				return
			}
		}
		t.Fatalf("the worker does not export %s", transport.CertExpiryMetric)
	}
	requireExpiry(float64(first.NotAfter.Unix()))

	_, err = transport.IssueCert(tlsDir, transport.RoleWorker, "w-7", nil, tlsDir)
	require.NoError(t, err)
	require.NoError(t, w.ReloadTLS())
	second := w.tls.Leaf()
	require.NotEqual(t, first.SerialNumber, second.SerialNumber)
	cert, _ := w.tls.Current()
	require.Equal(t, second, cert.Leaf, "later connections present the new certificate")
	requireExpiry(float64(second.NotAfter.Unix()))

	_, err = transport.IssueCert(tlsDir, transport.RoleWorker, "w-8", nil, tlsDir)
	require.NoError(t, err)
	require.ErrorContains(t, w.ReloadTLS(), "this node runs as corral://")
	require.Equal(t, second.SerialNumber, w.tls.Leaf().SerialNumber)
	require.Equal(t, "w-7", w.ID())

	// A worker on an injected dialer has no TLS dir to reload.
	mem := transport.NewMemNetwork(1)
	w2, err := Start(Config{DataDir: t.TempDir(), Controllers: []string{"mem-1"}, Dialer: mem.StreamDialer(2), Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(w2.Halt)
	require.ErrorContains(t, w2.ReloadTLS(), "uses no TLS dir")
}
