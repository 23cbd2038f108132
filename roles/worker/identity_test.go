package worker

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

func TestIDFromCertificate(t *testing.T) {
	t.Parallel()
	worker := transport.Identity{Cluster: "c", Role: transport.RoleWorker, ID: "w-1"}
	ctrl := transport.ControllerIdentity("c", 1)
	for _, tc := range []struct {
		name    string
		self    transport.Identity
		want    string
		id, err string
	}{
		{name: "worker cert names the id", self: worker, id: "w-1"},
		{name: "flag agrees with the cert", self: worker, want: "w-1", id: "w-1"},
		{name: "flag names another worker", self: worker, want: "w-2", err: "certificate is for worker w-1, not w-2"},
		{name: "controller cert binds nothing", self: ctrl, want: "w-9", id: "w-9"},
		{name: "controller cert, no flag", self: ctrl, id: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := idFromCertificate(tc.self, tc.want)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.id, id)
		})
	}
}

// A worker started with a worker certificate runs under the certificate's
// id, and refuses a data dir or flag that names another.
func TestWorker_RunsUnderItsCertificatesID(t *testing.T) {
	tlsDir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleWorker, "gpu-7", nil))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{DataDir: t.TempDir(), Controllers: []string{"127.0.0.1:1"}, TLSDir: tlsDir, Logger: quiet}
	w, err := Start(cfg)
	require.NoError(t, err)
	require.Equal(t, "gpu-7", w.Status().ID)
	w.Halt()

	cfg.ID = "gpu-8"
	_, err = Start(cfg)
	require.ErrorContains(t, err, "certificate is for worker gpu-7, not gpu-8")

	other := Config{DataDir: t.TempDir(), Controllers: []string{"127.0.0.1:1"}, TLSDir: tlsDir, Logger: quiet}
	_, err = resolveWorkerID(other.DataDir, "old-id")
	require.NoError(t, err)
	_, err = Start(other)
	require.ErrorContains(t, err, "belongs to worker old-id")
}
