package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// certs ca --if-missing keeps an existing CA of the same cluster (one-shot
// setup containers run it on every start) and never replaces a CA.
func TestCertsCAIfMissing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca")
	_, _, err := run(t, "certs", "ca", "--dir", dir, "--cluster", "prod", "--if-missing")
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(dir, transport.CAKeyFile))
	require.NoError(t, err)

	_, _, err = run(t, "certs", "ca", "--dir", dir, "--cluster", "prod")
	require.ErrorContains(t, err, "already exists", "without --if-missing a second CA is refused")
	out, _, err := run(t, "certs", "ca", "--dir", dir, "--cluster", "prod", "--if-missing")
	require.NoError(t, err)
	require.Equal(t, "kept the CA of cluster prod already in "+dir+"\n", out)
	_, _, err = run(t, "certs", "ca", "--dir", dir, "--cluster", "other", "--if-missing")
	require.ErrorContains(t, err, `names cluster "prod", not --cluster "other"`)

	after, err := os.ReadFile(filepath.Join(dir, transport.CAKeyFile))
	require.NoError(t, err)
	require.Equal(t, before, after, "the CA key was replaced")
}
