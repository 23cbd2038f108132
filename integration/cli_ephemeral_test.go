package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCLI_EphemeralKeysAndServicesEndWithTheirLease(t *testing.T) {
	c := newCluster(t, 1)
	c.startAll()
	c.waitLeader(30 * time.Second)
	eps := "--endpoints=" + c.nodes[1].endpoint()

	out, code := runCLI(t, "lease", "grant", eps, "30s")
	require.Equal(t, 0, code, out)
	lease := strings.TrimSpace(out)

	out, code = runCLI(t, "kv", "put", eps, "--lease="+lease, "masters/m1", "10.0.0.5:5678")
	require.Equal(t, 0, code, out)
	out, code = runCLI(t, "service", "register", eps, "--lease="+lease, "--meta=zone=a", "master", "m1", "10.0.0.5:5678")
	require.Equal(t, 0, code, out)
	out, code = runCLI(t, "service", "ls", eps, "master")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "10.0.0.5:5678")

	out, code = runCLI(t, "service", "register", eps, "master", "m2", "10.0.0.6:5678")
	require.Equal(t, 1, code, "register without a lease must fail: %s", out)

	out, code = runCLI(t, "lease", "revoke", eps, lease)
	require.Equal(t, 0, code, out)
	out, code = runCLI(t, "kv", "get", eps, "masters/m1")
	require.Equal(t, 1, code, "the ephemeral key outlived its lease: %s", out)
	out, code = runCLI(t, "service", "ls", eps, "master")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "10.0.0.5:5678")
}
