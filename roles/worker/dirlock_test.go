package worker

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// A second worker on a data dir in use refuses to start and says so; the
// dir is free again once the first worker stopped, and a failed Start
// leaves it free.
func TestWorker_DataDirInUse(t *testing.T) {
	tlsDir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleWorker, "w-1", nil))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Controllers: []string{"127.0.0.1:1"}, TLSDir: tlsDir, Logger: quiet}
	w, err := Start(cfg)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b))

	_, err = Start(cfg)
	require.EqualError(t, err, "data dir "+dir+": in use by another process (this process); "+
		"stop that process first, or give this worker another --data-dir")

	require.NoError(t, w.Close())
	cfg.ID = "w-2" // refused after the lock is taken: the failed Start must release it
	_, err = Start(cfg)
	require.ErrorContains(t, err, "not w-2")
	cfg.ID = ""
	w, err = Start(cfg)
	require.NoError(t, err)
	w.Halt()
}
