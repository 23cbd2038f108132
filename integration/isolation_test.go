package integration

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// isoProbe is a CORRAL_* variable in the workers' environment that no task
// may see (a worker's tokens come in such variables).
const isoProbe = "CORRAL_ISOLATION_PROBE"

// isoJob is a batch job pinned to the worker labelled iso=pool, never
// rescheduled, that runs script with /bin/sh (as user, when not "").
func isoJob(name, pool, user, script string) string {
	u := ""
	if user != "" {
		u = fmt.Sprintf(`, "user": %q`, user)
	}
	return fmt.Sprintf(`{"name": %q, "type": "batch", "reschedule": false,
		"constraints": [{"label": "iso", "operator": "=", "value": %q}],
		"task": {"command": "/bin/sh", "args": ["-c", %q]%s}}`, name, pool, script, u)
}

// isoEnded waits for the job's only allocation to end and returns it.
func isoEnded(c *cluster, job string) itAlloc {
	c.t.Helper()
	as := c.waitAllocs(job, "the allocation ended", 60*time.Second, func(as []itAlloc) bool {
		return len(as) == 1 && (as[0].State == "exited" || as[0].State == "failed")
	})
	return as[0]
}

// Task isolation on real workers running as root (issue 18, item 4): a
// task runs as nobody, cannot read its worker's TLS key even when the
// operator left the TLS dir open, sees none of the worker's CORRAL_*
// variables, and the worker refuses commands outside --allowed-commands and
// users outside --allowed-task-users with a clear reason.
func TestIsolation_Tasks(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("isolation test: skipped under -short (the workers must run as root)")
	case os.Geteuid() != 0:
		t.Fatal("the workers must run as root to switch the tasks' user: run this test as root (./.ci/run does), or use -short to skip it")
	}
	nobody, err := user.Lookup("nobody")
	require.NoError(t, err)
	daemon, err := user.Lookup("daemon")
	require.NoError(t, err)
	t.Setenv(isoProbe, "worker-secret-7f3a") // inherited by the worker processes

	c := newCluster(t, 1, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	eps := "--endpoints=" + c.nodes[1].endpoint()

	open := c.newWorker("open", "--labels=iso=open", "--allowed-task-users=daemon")
	// A careless operator: the TLS dir and key readable by anyone, their
	// parents traversable. The worker makes its TLS dir 0700 at start.
	tlsDir := filepath.Join(c.dir, "tls-worker-open")
	key := filepath.Join(tlsDir, "node-key.pem")
	for _, d := range []string{filepath.Dir(c.dir), c.dir} {
		require.NoError(t, os.Chmod(d, 0o711))
	}
	require.NoError(t, os.Chmod(tlsDir, 0o755))
	require.NoError(t, os.Chmod(key, 0o644))
	open.start()
	strict := c.newWorker("strict", "--labels=iso=strict", "--allowed-commands=/bin/sleep,/usr/bin/sleep")
	strict.start()
	self := nonRootWorker(t, c, nobody, "self", "--labels=iso=self", "--allowed-task-users=daemon")
	self.start()
	c.waitWorker(open.id(), "alive", 30*time.Second)
	c.waitWorker(strict.id(), "alive", 30*time.Second)
	c.waitWorker(self.id(), "alive", 30*time.Second)

	logs := func(a itAlloc) string {
		t.Helper()
		out, code := runCLI(t, "alloc", "logs", eps, a.ID)
		require.Zero(t, code, out)
		return out
	}

	t.Run("task is not root", func(t *testing.T) {
		c.submitJob(isoJob("iso-id", "open", "", "id -u"))
		a := isoEnded(c, "iso-id")
		require.Equal(t, "exited", a.State, a.Message)
		out := logs(a)
		require.NotContains(t, strings.Fields(out), "0", "the task ran as root: %q", out)
		require.Contains(t, strings.Fields(out), nobody.Uid, "the task runs as nobody: %q", out)
	})

	t.Run("task cannot read the worker's key", func(t *testing.T) {
		c.submitJob(isoJob("iso-key", "open", "",
			"if cat "+key+"; then echo KEY-WAS-READ; else echo key-denied; fi"))
		a := isoEnded(c, "iso-key")
		require.Equal(t, "exited", a.State, a.Message)
		out := logs(a)
		require.NotContains(t, out, "KEY-WAS-READ")
		require.NotContains(t, out, "PRIVATE KEY")
		require.Contains(t, out, "key-denied")
	})

	t.Run("task sees no CORRAL_ variable of the worker", func(t *testing.T) {
		c.submitJob(isoJob("iso-env", "open", "", "env; echo env-done"))
		a := isoEnded(c, "iso-env")
		require.Equal(t, "exited", a.State, a.Message)
		out := logs(a)
		require.Contains(t, out, "env-done")
		require.NotContains(t, out, isoProbe)
		require.NotContains(t, out, "worker-secret-7f3a")
	})

	t.Run("allowed commands", func(t *testing.T) {
		c.submitJob(isoJob("iso-cmd", "strict", "", "id"))
		a := isoEnded(c, "iso-cmd")
		require.Equal(t, "failed", a.State)
		require.Contains(t, a.Message, `command "/bin/sh"`)
		require.Contains(t, a.Message, "--allowed-commands: /bin/sleep,/usr/bin/sleep")
	})

	t.Run("allowed task users", func(t *testing.T) {
		c.submitJob(isoJob("iso-user-no", "open", "bin", "id -u"))
		a := isoEnded(c, "iso-user-no")
		require.Equal(t, "failed", a.State)
		require.Contains(t, a.Message, `task.user "bin" is not allowed on this worker (--allowed-task-users: daemon`)

		c.submitJob(isoJob("iso-user-yes", "open", "daemon", "id -u"))
		a = isoEnded(c, "iso-user-yes")
		require.Equal(t, "exited", a.State, a.Message)
		require.Contains(t, strings.Fields(logs(a)), daemon.Uid, "a listed user may be named")
	})

	t.Run("a worker that is not root", func(t *testing.T) {
		c.submitJob(isoJob("iso-self", "self", "", "id -u"))
		a := isoEnded(c, "iso-self")
		require.Equal(t, "exited", a.State, a.Message)
		require.Contains(t, strings.Fields(logs(a)), nobody.Uid, "the task runs as the worker's own user")

		c.submitJob(isoJob("iso-self-daemon", "self", "daemon", "id -u"))
		a = isoEnded(c, "iso-self-daemon")
		require.Equal(t, "failed", a.State)
		require.Contains(t, a.Message, `task.user "daemon" cannot be used: this worker runs as "nobody" (not root)`)
	})
}

// nonRootWorker prepares a worker that runs as user u (with setpriv): its
// binary, data dir and TLS dir are made reachable and owned by u.
func nonRootWorker(t *testing.T, c *cluster, u *user.User, name string, extra ...string) *workerProc {
	t.Helper()
	w := c.newWorker(name, extra...)
	uid, err := strconv.Atoi(u.Uid)
	require.NoError(t, err)
	gid, err := strconv.Atoi(u.Gid)
	require.NoError(t, err)
	bin := filepath.Join(c.dir, "bin-"+name)
	require.NoError(t, os.Mkdir(bin, 0o755))
	exe, err := os.ReadFile(corralBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "corral"), exe, 0o755))
	require.NoError(t, os.Mkdir(w.dataDir, 0o700))
	tlsDir := filepath.Join(c.dir, "tls-worker-"+name)
	for _, p := range []string{w.dataDir, tlsDir, filepath.Join(tlsDir, "ca.pem"), filepath.Join(tlsDir, "node.pem"),
		filepath.Join(tlsDir, "node-key.pem")} {
		require.NoError(t, os.Chown(p, uid, gid))
	}
	// setpriv runs sh as u, which runs u's copy of the binary ($0) with the
	// harness's arguments minus its own binary path ($1).
	w.wrap = []string{"setpriv", "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups",
		"/bin/sh", "-c", `shift; exec "$0" "$@"`, filepath.Join(bin, "corral")}
	return w
}
