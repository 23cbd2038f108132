package cli

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

// certs revoke puts a certificate (by serial or --cert) or a worker on the
// replicated deny-list, and certs revoked lists it.
func TestCertsRevokeAgainstController(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a controller")
	}
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1"}))
	ctrl, err := roles.StartController(roles.ControllerConfig{
		NodeID: 1, DataDir: filepath.Join(dir, "data"), ClusterAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Peers: map[uint64]string{1: "127.0.0.1:0"}, TLSDir: tlsDir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctrl.Close() })
	ep := "--endpoints=http://" + ctrl.HTTPAddr()

	wdir := filepath.Join(dir, "w1")
	out, _, err := run(t, "certs", "issue", "--ca-dir", tlsDir, "--role", "worker", "--id", "w-1", "--out", wdir)
	require.NoError(t, err)
	cert, err := readCertFile(filepath.Join(wdir, transport.NodeFile))
	require.NoError(t, err)
	serial := metadata.SerialHex(cert.SerialNumber)
	require.Contains(t, out, "serial "+serial)

	require.Eventually(t, func() bool {
		_, _, err := run(t, "certs", "revoke", ep, "--cert", filepath.Join(wdir, transport.NodeFile), "--reason", "lost")
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)
	out, _, err = run(t, "certs", "revoke", ep, "--worker", "w-2")
	require.NoError(t, err)
	require.Equal(t, "revoked every certificate of worker w-2: controllers refuse it from now on\n", out)
	out, _, err = run(t, "certs", "revoked", ep)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^SERIAL\s+WORKER\s+REVOKED\s+REASON\n`+serial+`\s+-\s+\S+\s+lost\n-\s+w-2\s+\S+\s+-\n$`, out)
}
