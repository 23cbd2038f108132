package transport

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A rotated certificate is served from the next look after the files
// change; files that do not load keep the previous pair.
func TestKeyPairReloader_PicksUpRotatedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, CreateCerts(dir, RoleController, "1", nil))
	certFile, keyFile := filepath.Join(dir, NodeFile), filepath.Join(dir, NodeKeyFile)
	r, err := NewKeyPairReloader(certFile, keyFile, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	now := time.Now()
	r.now = func() time.Time { return now }
	first := r.Certificate().Leaf.SerialNumber

	// Rotate: a new pair for the same identity, with a later mtime.
	_, err = IssueCert(dir, RoleController, "1", nil, dir)
	require.NoError(t, err)
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(certFile, later, later))
	require.NoError(t, os.Chtimes(keyFile, later, later))
	require.Equal(t, first, r.Certificate().Leaf.SerialNumber, "looked again within the check interval")
	now = now.Add(reloadCheckInterval)
	second := r.Certificate().Leaf.SerialNumber
	require.NotEqual(t, first, second, "the rotated certificate was not picked up")

	// A half-copied rotation (garbage key) keeps the working pair.
	require.NoError(t, os.WriteFile(keyFile, []byte("garbage"), 0o600))
	evenLater := later.Add(time.Minute)
	require.NoError(t, os.Chtimes(keyFile, evenLater, evenLater))
	now = now.Add(reloadCheckInterval)
	require.Equal(t, second, r.Certificate().Leaf.SerialNumber)

	_, err = NewKeyPairReloader(filepath.Join(dir, "missing.pem"), keyFile, nil)
	require.ErrorContains(t, err, "missing.pem")
}
