package executor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCgroup_OwnPath(t *testing.T) {
	p, err := ownCgroupPath("12:memory:/x\n0::/user.slice/worker.scope\n")
	require.NoError(t, err)
	require.Equal(t, "/user.slice/worker.scope", p)
	_, err = ownCgroupPath("4:memory:/docker/abc\n")
	require.ErrorContains(t, err, "no cgroup v2 entry")
	_, err = ownCgroupPath("0::relative")
	require.Error(t, err)
}

// A fake hierarchy (plain directories) shows what the worker writes; the
// kernel side (CLONE_INTO_CGROUP, enforcement) needs a cgroup v2 machine.
func TestCgroup_SetupAndTaskLimitsOnAFakeHierarchy(t *testing.T) {
	mount := t.TempDir()
	base := filepath.Join(mount, "svc")
	require.NoError(t, os.MkdirAll(base, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mount, "cgroup.controllers"), []byte("cpu memory io"), 0o644))

	require.Contains(t, setupCgroups(mount, "0::/svc\n", 42).Reason, "cgroup.controllers")
	require.NoError(t, os.WriteFile(filepath.Join(base, "cgroup.controllers"), []byte("cpu io"), 0o644))
	require.Contains(t, setupCgroups(mount, "0::/svc\n", 42).Reason, "memory controller is not delegated")
	require.NoError(t, os.WriteFile(filepath.Join(base, "cgroup.controllers"), []byte("cpuset cpu io memory pids"), 0o644))

	s := setupCgroups(mount, "0::/svc\n", 42)
	require.Empty(t, s.Reason)
	require.Equal(t, filepath.Join(base, "corral-allocs"), s.AllocsRoot)
	require.Equal(t, "cgroup-v2", s.Label())
	read := func(p ...string) string {
		b, err := os.ReadFile(filepath.Join(p...))
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "42", read(base, "corral-worker", "cgroup.procs"), "the worker moves itself into a leaf")
	require.Equal(t, "+cpu +memory", read(base, "cgroup.subtree_control"))
	require.Equal(t, "+cpu +memory", read(s.AllocsRoot, "cgroup.subtree_control"))

	task := filepath.Join(s.AllocsRoot, "a1")
	require.NoError(t, taskCgroupLimits(task, 250, 64))
	require.Equal(t, "67108864", read(task, "memory.max"))
	require.Equal(t, "25000 100000", read(task, "cpu.max"))
	require.NoError(t, taskCgroupLimits(filepath.Join(s.AllocsRoot, "a2"), 0, 0))
	_, err := os.Stat(filepath.Join(s.AllocsRoot, "a2", "cpu.max"))
	require.True(t, os.IsNotExist(err), "no limit asked, none written")
}

func TestCgroup_NotMountedMeansNotEnforced(t *testing.T) {
	s := setupCgroups(t.TempDir(), "0::/\n", 1)
	require.Equal(t, "not-enforced", s.Label())
	require.Contains(t, s.Reason, "not mounted")
}
