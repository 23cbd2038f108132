package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCLI_LockAndElect(t *testing.T) {
	c := newCluster(t, 1)
	c.startAll()
	c.waitLeader(30 * time.Second)
	eps := "--endpoints=" + c.nodes[1].endpoint()

	// The command's exit code is corral's; the token is in its environment.
	out, code := runCLI(t, "lock", eps, "--ttl=3s", "job", "--", "sh", "-c", "echo token=$CORRAL_FENCING_TOKEN; exit 3")
	require.Equal(t, 3, code, out)
	require.Regexp(t, `token=[1-9][0-9]*`, out)

	out, code = runCLI(t, "elect", eps, "--id=a", "coord", "--", "sh", "-c", "echo epoch=$CORRAL_ELECTION_EPOCH")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `epoch=[1-9][0-9]*`, out)

	// While one holder runs, another gives up after --wait.
	marker := filepath.Join(t.TempDir(), "lease")
	holder := exec.Command(corralBin, "lock", eps, "--ttl=3s", "job", "--", "sh", "-c", "echo $CORRAL_LEASE_ID > "+marker+"; sleep 60")
	var hout strings.Builder
	holder.Stdout, holder.Stderr = &hout, &hout
	require.NoError(t, holder.Start())
	var lease string
	require.Eventually(t, func() bool {
		b, err := exec.Command("cat", marker).Output()
		lease = strings.TrimSpace(string(b))
		return err == nil && lease != ""
	}, 20*time.Second, 20*time.Millisecond)
	out, code = runCLI(t, "lock", eps, "--wait=300ms", "job", "--", "true")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "not acquired within")

	// lease ls shows the holder's lease and the lock it holds.
	out, code = runCLI(t, "lease", "ls", eps)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, lease)
	require.Contains(t, out, "job")

	// Losing the lock (its lease revoked) kills the command: exit 75.
	out, code = runCLI(t, "lease", "revoke", eps, lease)
	require.Equal(t, 0, code, out)
	done := make(chan error, 1)
	go func() { done <- holder.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	select {
	case err := <-done:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 75, ee.ExitCode(), hout.String())
	case <-ctx.Done():
		_ = holder.Process.Kill()
		t.Fatalf("corral lock did not stop after its lease was revoked: %s", hout.String())
	}
}
