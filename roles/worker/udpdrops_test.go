package worker

import (
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// A worker with its own QUIC socket reports the kernel's drops on it, so
// an operator can tell a starved worker host from a silent controller.
func TestWorker_ReportsItsSocketsDrops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's per-socket counts are read on Linux only")
	}
	tlsDir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleWorker, "w-1", nil))
	w, err := Start(Config{DataDir: t.TempDir(), Controllers: []string{"127.0.0.1:1"}, TLSDir: tlsDir,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer w.Halt()
	mfs, err := w.Registry().Gather()
	require.NoError(t, err)
	found := map[string]bool{}
	for _, mf := range mfs {
		found[mf.GetName()] = len(mf.GetMetric()) == 1
	}
	require.True(t, found["corral_worker_udp_receive_drops_total"], "drops not reported")
	require.True(t, found["corral_worker_udp_receive_queue_bytes"], "queue not reported")
}
