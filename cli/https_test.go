package cli

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

// The API serves HTTPS with the node certificate, and the CLI talks to it
// with --cacert; without the CA, or over plain HTTP, it says what to do.
func TestHTTPSFromTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a controller")
	}
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1", "localhost"}))
	ctrl, err := roles.StartController(roles.ControllerConfig{
		NodeID: 1, DataDir: filepath.Join(dir, "data"), ClusterAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Peers: map[uint64]string{1: "127.0.0.1:0"}, TLSDir: tlsDir,
		HTTPTLSCert: filepath.Join(tlsDir, transport.NodeFile), HTTPTLSKey: filepath.Join(tlsDir, transport.NodeKeyFile),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctrl.Close() })
	ep := "--endpoints=https://" + ctrl.HTTPAddr()
	ca := "--cacert=" + filepath.Join(tlsDir, transport.CAFile)

	require.Eventually(t, func() bool {
		_, _, err := run(t, "kv", "put", ep, ca, "k", "v")
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "no write over HTTPS")
	out, _, err := run(t, "kv", "get", ep, ca, "k")
	require.NoError(t, err)
	require.Contains(t, out, "v")

	_, _, err = run(t, "kv", "get", ep, "k")
	require.ErrorContains(t, err, "pass --cacert with the CA that signed --http-tls-cert")
	_, _, err = run(t, "kv", "get", "--endpoints=http://"+ctrl.HTTPAddr(), "k")
	require.Error(t, err, "the HTTPS port answered plain HTTP")
	_, _, err = run(t, "kv", "get", ep, "--cacert="+filepath.Join(tlsDir, transport.NodeKeyFile), "k")
	require.ErrorContains(t, err, "no PEM certificate")
}
