package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCLI_KVCommandsAgainstACluster(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	c.waitLeader(30 * time.Second)
	eps := "--endpoints=" + c.nodes[1].endpoint() + "," + c.nodes[2].endpoint()

	out, code := runCLI(t, "kv", "put", eps, "app/config", "v1")
	require.Equal(t, 0, code, out)
	rev := strings.TrimSpace(out)

	out, code = runCLI(t, "kv", "get", eps, "app/config")
	require.Equal(t, 0, code, out)
	require.Equal(t, "v1", strings.TrimSpace(out))

	// A compare-and-set against a stale revision fails with exit code 1.
	out, code = runCLI(t, "kv", "put", eps, "--prev-revision=999999", "app/config", "v2")
	require.Equal(t, 1, code, out)
	out, code = runCLI(t, "kv", "put", eps, "--prev-revision="+rev, "app/config", "v2")
	require.Equal(t, 0, code, out)

	out, code = runCLI(t, "kv", "ls", eps, "app/")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "app/config")
	require.Contains(t, out, "v2")

	out, code = runCLI(t, "status", eps)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "leader")

	out, code = runCLI(t, "kv", "del", eps, "app/config")
	require.Equal(t, 0, code, out)
	out, code = runCLI(t, "kv", "get", eps, "app/config")
	require.Equal(t, 1, code, out)

	out, code = runCLI(t, "kv", "put", eps)
	require.Equal(t, 1, code, "missing arguments must fail: %s", out)
}

func TestCLI_DevModeServes(t *testing.T) {
	httpAddr, clusterAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(corralBin, "dev", "--data-dir="+t.TempDir(), "--http-addr="+httpAddr, "--cluster-addr="+clusterAddr)
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Log(output.String())
		}
	}()
	eps := fmt.Sprintf("--endpoints=http://%s", httpAddr)
	require.Eventually(t, func() bool {
		_, code := runCLI(t, "kv", "put", eps, "hello", "world")
		return code == 0
	}, 60*time.Second, 100*time.Millisecond)
	out, code := runCLI(t, "kv", "get", eps, "hello")
	require.Equal(t, 0, code, out)
	require.Equal(t, "world", strings.TrimSpace(out))
}
