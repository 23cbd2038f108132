package controller

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// A controller starts only with a certificate that names it: peers accept
// its raft messages only as the node its certificate names, so a swapped TLS
// dir is an error at start, not a stream of refusals later.
func TestController_RefusesACertificateForAnotherNode(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		role transport.Role
		id   string
	}{
		{name: "another controller", role: transport.RoleController, id: "2"},
		{name: "a worker", role: transport.RoleWorker, id: "w-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tlsDir := filepath.Join(t.TempDir(), "tls")
			require.NoError(t, transport.CreateCerts(tlsDir, tc.role, tc.id, nil))
			_, err := Start(Config{NodeID: 1, DataDir: t.TempDir(), ClusterAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
				Peers: map[uint64]string{1: "127.0.0.1:0"}, TLSDir: tlsDir, Logger: quiet})
			require.ErrorContains(t, err, "not controller 1: issue one with 'corral certs issue --role controller --id 1'")
		})
	}
}
