package executor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Task resource limits through cgroup v2. A worker that runs in a cgroup v2
// hierarchy with the cpu and memory controllers delegated to it moves
// itself into a leaf (cgroup v2 forbids processes in a cgroup whose
// controllers are enabled for children), enables the controllers for a
// sibling "corral-allocs" and gives every task its own cgroup below it,
// with memory.max and cpu.max from the job's resources. Anywhere else
// (cgroup v1, no delegation, not permitted) limits are not enforced, and
// the worker says so in its label corral.limits.

// cgroupMount is where the unified hierarchy is mounted.
const cgroupMount = "/sys/fs/cgroup"

// CgroupSetup is the outcome of preparing task cgroups.
type CgroupSetup struct {
	// AllocsRoot is the parent of every task cgroup; "" when limits are
	// not enforced.
	AllocsRoot string
	// Why limits are not enforced.
	Reason string
}

// Label is the value of the worker's corral.limits label.
func (c CgroupSetup) Label() string {
	if c.AllocsRoot != "" {
		return "cgroup-v2"
	}
	return "not-enforced"
}

// ownCgroupPath returns this process's cgroup v2 path from the content of
// /proc/self/cgroup ("0::/some/path"), or an error when there is none.
func ownCgroupPath(procSelfCgroup string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(procSelfCgroup))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			if !strings.HasPrefix(rest, "/") {
				return "", fmt.Errorf("bad cgroup v2 path %q", rest)
			}
			return rest, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// setupCgroups prepares task cgroups under mount for the process pid whose
// /proc/self/cgroup content is procSelf. It never fails: a machine that
// does not allow limits yields a setup that says why.
func setupCgroups(mount, procSelf string, pid int) CgroupSetup {
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err != nil {
		return CgroupSetup{Reason: "cgroup v2 is not mounted at " + mount + " (cgroup v1 or hybrid)"}
	}
	own, err := ownCgroupPath(procSelf)
	if err != nil {
		return CgroupSetup{Reason: err.Error()}
	}
	base := filepath.Join(mount, own)
	ctrls, err := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return CgroupSetup{Reason: fmt.Sprintf("read %s: %v", base, err)}
	}
	have := strings.Fields(string(ctrls))
	for _, want := range []string{"cpu", "memory"} {
		if !contains(have, want) {
			return CgroupSetup{Reason: fmt.Sprintf("the %s controller is not delegated to %s", want, base)}
		}
	}
	self := filepath.Join(base, "corral-worker")
	allocs := filepath.Join(base, "corral-allocs")
	steps := []func() error{
		func() error { return mkdirOK(self) },
		func() error { return writeFile(filepath.Join(self, "cgroup.procs"), strconv.Itoa(pid)) },
		func() error { return writeFile(filepath.Join(base, "cgroup.subtree_control"), "+cpu +memory") },
		func() error { return mkdirOK(allocs) },
		func() error { return writeFile(filepath.Join(allocs, "cgroup.subtree_control"), "+cpu +memory") },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return CgroupSetup{Reason: fmt.Sprintf("prepare task cgroups under %s: %v", base, err)}
		}
	}
	return CgroupSetup{AllocsRoot: allocs}
}

// DetectCgroups prepares task cgroups for this process.
func DetectCgroups() CgroupSetup {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return CgroupSetup{Reason: fmt.Sprintf("read /proc/self/cgroup: %v", err)}
	}
	return setupCgroups(cgroupMount, string(b), os.Getpid())
}

// taskCgroupLimits writes a task cgroup's limits: memory.max in bytes and
// cpu.max as a quota per 100 ms period (1000 millicores = one CPU). Zero
// means no limit for that resource.
func taskCgroupLimits(dir string, cpuMillis, memoryMB int64) error {
	if err := mkdirOK(dir); err != nil {
		return err
	}
	if memoryMB > 0 {
		if err := writeFile(filepath.Join(dir, "memory.max"), strconv.FormatInt(memoryMB<<20, 10)); err != nil {
			return err
		}
	}
	if cpuMillis > 0 {
		quota := max(cpuMillis*100, 1000) // the kernel's minimum quota is 1 ms
		if err := writeFile(filepath.Join(dir, "cpu.max"), fmt.Sprintf("%d 100000", quota)); err != nil {
			return err
		}
	}
	return nil
}

func mkdirOK(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

func writeFile(path, content string) error {
	// cgroup files take one write; O_TRUNC is refused by some of them.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644) // a plain directory in tests
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
