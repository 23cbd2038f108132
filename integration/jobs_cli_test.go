package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The job commands against real processes: run a batch job from a file,
// see its exit code in `job status`, read its log with `alloc logs`, drain
// and undo a worker, and get exit code 1 with the field named for a bad
// spec.
func TestJobs_CLI(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	w := c.newWorker("a")
	w.start()
	c.waitWorker(w.id(), "alive", 30*time.Second)
	eps := "--endpoints=" + c.nodes[1].endpoint() + "," + c.nodes[2].endpoint() + "," + c.nodes[3].endpoint()

	spec := filepath.Join(t.TempDir(), "job.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("name: hello\ntype: batch\ntask:\n  command: /bin/sh\n  args: [\"-c\", \"echo line-from-task; exit 4\"]\nreschedule: false\n"), 0o644))
	out, code := runCLI(t, "job", "run", eps, spec)
	require.Zero(t, code, out)
	require.Contains(t, out, "hello")

	// "1 failed" is the allocation count; the word alone also appears in
	// the restart policy line, which made this wait end before the task ran.
	var status string
	require.Eventually(t, func() bool {
		status, code = runCLI(t, "job", "status", eps, "hello")
		return code == 0 && strings.Contains(status, "1 failed")
	}, 30*time.Second, 200*time.Millisecond, "job never failed: %s", status)
	as, _ := c.allocs("hello")
	require.Len(t, as, 1)
	require.Equal(t, "failed", as[0].State)
	require.NotNil(t, as[0].ExitCode)
	require.Equal(t, 4, *as[0].ExitCode)
	require.Regexp(t, `(?m)^`+as[0].ID+`\s.*\s4\s`, status, "the exit code is shown")
	out, code = runCLI(t, "alloc", "logs", eps, as[0].ID)
	require.Zero(t, code, out)
	require.Contains(t, out, "line-from-task")
	out, code = runCLI(t, "alloc", "list", eps, "--job=hello")
	require.Zero(t, code, out)
	require.Contains(t, out, as[0].ID)

	out, code = runCLI(t, "worker", "drain", eps, w.id())
	require.Zero(t, code, out)
	c.waitWorker(w.id(), "draining", 30*time.Second)
	out, code = runCLI(t, "worker", "drain", eps, "--undo", w.id())
	require.Zero(t, code, out)
	c.waitWorker(w.id(), "alive", 30*time.Second)

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"name":"x","count":0,"task":{"command":""}}`), 0o644))
	out, code = runCLI(t, "job", "run", eps, bad)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "task.command")
}
