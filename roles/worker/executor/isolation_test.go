package executor

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

func TestTaskUserPolicy_Choose(t *testing.T) {
	t.Parallel()
	root := taskUserPolicy{root: true, self: "root", def: "nobody", allowed: []string{"daemon", "www"}}
	cases := []struct {
		name      string
		policy    taskUserPolicy
		requested string
		want      string
		err       string // substring of the refusal; "" = allowed
	}{
		{"root, no user: the task user", root, "", "nobody", ""},
		{"root, the task user by name", root, "nobody", "nobody", ""},
		{"root, an allowed user", root, "www", "www", ""},
		{"root, a user not allowed", root, "mallory", "", `task.user "mallory" is not allowed on this worker (--allowed-task-users: daemon,www`},
		{"root, root itself is not allowed unless listed", root, "root", "", `task.user "root" is not allowed`},
		{"root, nothing allowed", taskUserPolicy{root: true, self: "root", def: "nobody"}, "daemon", "", "--allowed-task-users: none"},
		{"root, no task user: itself", taskUserPolicy{root: true, self: "root"}, "", "root", ""},
		{"not root, no user: itself", taskUserPolicy{self: "alice", def: "nobody", allowed: []string{"bob"}}, "", "alice", ""},
		{"not root, itself by name", taskUserPolicy{self: "alice"}, "alice", "alice", ""},
		{"not root, another user even if listed", taskUserPolicy{self: "alice", allowed: []string{"bob"}}, "bob", "",
			`task.user "bob" cannot be used: this worker runs as "alice" (not root)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.policy.choose(c.requested)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestCheckCommand(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "data"), nil, 0o644))
	allowBin := []string{bin + "/*"}
	cases := []struct {
		name     string
		allowed  []string
		command  string
		pathEnv  string
		workdir  string
		want     string
		err      string
		noChange bool // with no globs the command is passed on as is
	}{
		{"no globs: anything, unresolved", nil, "whatever", "", "", "whatever", "", true},
		{"absolute and allowed", allowBin, bin + "/tool", "", "", bin + "/tool", "", false},
		{"absolute, cleaned before matching", allowBin, bin + "/../" + filepath.Base(bin) + "/tool", "", "", bin + "/tool", "", false},
		{"bare name found in PATH", allowBin, "tool", "/nonexistent:" + bin, "", bin + "/tool", "", false},
		{"bare name resolving elsewhere", []string{"/usr/bin/*"}, "tool", bin, "", "", "matches none of --allowed-commands: /usr/bin/*", false},
		{"not executable: not found", allowBin, "data", bin, "", "", "not found in the task's PATH", false},
		{"relative PATH entries are ignored", allowBin, "tool", ".", bin, "", "not found in the task's PATH", false},
		{"relative with a slash: from the workdir", allowBin, "./tool", "", bin, bin + "/tool", "", false},
		{"escaping a glob with ..", allowBin, bin + "/../etc/passwd", "", "", "", "matches none of --allowed-commands", false},
		{"another command", []string{"/bin/sleep", "/usr/bin/sleep"}, "/usr/bin/id", "", "", "",
			`command "/usr/bin/id" (/usr/bin/id) is not allowed on this worker: it matches none of --allowed-commands: /bin/sleep,/usr/bin/sleep`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := checkCommand(c.allowed, c.command, c.pathEnv, c.workdir)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestParseCredential(t *testing.T) {
	t.Parallel()
	c, err := ParseCredential(-1, -1, "")
	require.NoError(t, err)
	require.Nil(t, c)
	c, err = ParseCredential(65534, 65534, "10, 20")
	require.NoError(t, err)
	require.Equal(t, &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{10, 20}}, c)
	_, err = ParseCredential(1, -1, "")
	require.Error(t, err)
	_, err = ParseCredential(1, 1, "x")
	require.Error(t, err)
}

// needRoot guards a test that switches users: it fails without root (a
// skipped isolation test proves nothing) unless -short asks to skip it.
func needRoot(t *testing.T) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip("switching the task's user needs root: skipped under -short")
	case os.Geteuid() != 0:
		t.Fatal("this test switches the task's user: run it as root (./.ci/run does), or use -short to skip it")
	}
}

func nobodyIDs(t *testing.T) (uid, gid string) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	return u.Uid, u.Gid
}

// TestExecutor_TaskRunsAsTaskUser: a root executor runs a task as its
// task user, in a dir of its own the task user owns, whose parents the
// task cannot traverse; the worker still reads the logs.
func TestExecutor_TaskRunsAsTaskUser(t *testing.T) {
	needRoot(t)
	t.Parallel()
	uid, gid := nobodyIDs(t)
	h := newExecHarness(t, func(c *Config) { c.TaskUser = "nobody" })
	h.e.Apply([]Alloc{
		shAlloc("u1", metadata.JobBatch, `id -u; id -g; echo mine > own; cat own; ls ..; ls `+h.dir+`; true`),
		shAlloc("u2", metadata.JobBatch, `echo secret > s`),
	})
	require.Contains(t, h.await("u1", metadata.AllocRunning).Message, " as nobody")
	require.Equal(t, 0, h.await("u2", metadata.AllocExited).ExitCode)
	require.Equal(t, 0, h.await("u1", metadata.AllocExited).ExitCode)
	out, _, err := h.e.ReadLog("u1", "stdout", 0, 0, 0)
	require.NoError(t, err)
	require.Equal(t, uid+"\n"+gid+"\nmine\n", string(out), "the task runs as nobody and writes in its own dir")
	errOut, _, err := h.e.ReadLog("u1", "stderr", 0, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(errOut), "Permission denied"), "it cannot list its parents: %s", errOut)

	for _, c := range []struct {
		path  string
		owner string
	}{
		{h.dir, "0"},
		{filepath.Join(h.dir, "u1"), "0"},
		{h.taskPath("u1", ""), uid},
	} {
		st, err := os.Stat(c.path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), st.Mode().Perm(), c.path)
		require.Equal(t, c.owner, strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Uid)), c.path)
	}
}

// TestExecutor_TaskCannotReachOtherTasks: two tasks of the same user
// cannot reach each other's dirs by path.
func TestExecutor_TaskCannotReachOtherTasks(t *testing.T) {
	needRoot(t)
	t.Parallel()
	nobodyIDs(t)
	h := newExecHarness(t, func(c *Config) {
		c.TaskUser = "nobody"
		// As an operator might leave them: the allocation root and its
		// parent traversable by anyone. The executor closes the root.
		require.NoError(t, os.Chmod(filepath.Dir(c.Dir), 0o711))
		require.NoError(t, os.Chmod(c.Dir, 0o755))
	})
	h.e.Apply([]Alloc{shAlloc("o1", metadata.JobBatch, `echo secret > s`)})
	require.Equal(t, 0, h.await("o1", metadata.AllocExited).ExitCode)
	h.e.Apply([]Alloc{shAlloc("o2", metadata.JobBatch, `cat `+h.taskPath("o1", "s"))})
	r := h.await("o2", metadata.AllocFailed)
	require.NotEqual(t, 0, r.ExitCode)
	errOut, _, err := h.e.ReadLog("o2", "stderr", 0, 0, 0)
	require.NoError(t, err)
	require.Contains(t, string(errOut), "Permission denied")
}

// TestExecutor_Refusals: the allocations a worker refuses fail at once with
// a reason that names the setting.
func TestExecutor_Refusals(t *testing.T) {
	t.Parallel()
	self := currentUserName()
	other := "nobody"
	if self == other {
		other = "root"
	}
	cases := []struct {
		name   string
		tweak  func(*Config)
		task   metadata.Task
		reason string
	}{
		{"a command not allowed", func(c *Config) { c.AllowedCommands = []string{"/bin/sleep", "/usr/bin/sleep"} },
			metadata.Task{Command: "/bin/sh", Args: []string{"-c", "id"}}, "matches none of --allowed-commands: /bin/sleep,/usr/bin/sleep"},
		{"a bare command not allowed", func(c *Config) { c.AllowedCommands = []string{"/bin/sleep"} },
			metadata.Task{Command: "sh"}, "is not allowed on this worker"},
		{"a user not allowed", func(c *Config) { c.AllowedTaskUsers = []string{"daemon"} },
			metadata.Task{Command: "/bin/true", User: "mallory"}, ""},
		{"another user on any worker", nil, metadata.Task{Command: "/bin/true", User: other}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newExecHarness(t, c.tweak)
			a := Alloc{ID: "x", Job: "j", Type: metadata.JobBatch, Desired: metadata.DesiredRun, Task: c.task}
			h.e.Apply([]Alloc{a})
			r := h.await("x", metadata.AllocFailed)
			require.Equal(t, -1, r.ExitCode)
			require.Contains(t, r.Message, c.reason)
			if c.task.User != "" {
				require.Contains(t, r.Message, `task.user "`+c.task.User+`"`)
			}
			_, _, err := h.e.ReadLog("x", "stdout", 0, 0, 0)
			require.ErrorContains(t, err, "never ran here", "nothing ran")
		})
	}
}

// TestExecutor_AllowedCommandRuns: a command that matches runs, by its
// resolved path.
func TestExecutor_AllowedCommandRuns(t *testing.T) {
	t.Parallel()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	h := newExecHarness(t, func(c *Config) { c.AllowedCommands = []string{"/bin/*", "/usr/bin/*", filepath.Dir(sh) + "/*"} })
	a := shAlloc("ok", metadata.JobBatch, "echo fine")
	a.Task.Command = "sh"
	a.Task.Env = map[string]string{"PATH": "/usr/bin:/bin"}
	h.e.Apply([]Alloc{a})
	require.Equal(t, 0, h.await("ok", metadata.AllocExited).ExitCode)
	out, _, err := h.e.ReadLog("ok", "stdout", 0, 0, 0)
	require.NoError(t, err)
	require.Equal(t, "fine\n", string(out))
}

// TestExecutor_NoWorkerEnv: the worker's CORRAL_* variables (tokens) do not
// reach the task, and the job's own variables override the supervisor's
// flags' variables without changing what the supervisor does. Not parallel:
// it sets the process environment.
func TestExecutor_NoWorkerEnv(t *testing.T) {
	t.Setenv("CORRAL_API_TOKEN", "worker-secret")
	t.Setenv("CORRAL_JOIN_TOKEN", "join-secret")
	h := newExecHarness(t, nil)
	a := shAlloc("e1", metadata.JobBatch, `env | sort; id -u`)
	a.Task.Env = map[string]string{"CORRAL_STDOUT": "/tmp/elsewhere", "CORRAL_UID": "1", "CORRAL_MINE": "job"}
	h.e.Apply([]Alloc{a})
	require.Equal(t, 0, h.await("e1", metadata.AllocExited).ExitCode)
	out, _, err := h.e.ReadLog("e1", "stdout", 0, 0, 0)
	require.NoError(t, err)
	require.NotContains(t, string(out), "secret")
	require.Contains(t, string(out), "CORRAL_MINE=job\n", "the job's own env applies")
	require.Contains(t, string(out), "CORRAL_ALLOC_ID=e1\n")
	require.True(t, strings.HasSuffix(string(out), "\n"+strconv.Itoa(os.Geteuid())+"\n"),
		"CORRAL_UID in the job's env does not set the task's user: %s", out)
}
