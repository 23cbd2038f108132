package main

// How a node of any of the three systems is found, stopped and started again
// the way it was started: shared by compare failover (one leader killed and
// restarted) and compare restart (all three nodes stopped and restarted).

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// listenerPID finds the process listening on the TCP port of endpoint (host:port or a URL) on this machine, from
// /proc/net/tcp{,6} and the processes' socket descriptors.
func listenerPID(endpoint string) (int, error) {
	hostPort := endpoint
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		hostPort = u.Host
	}
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		return 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0, err
	}
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fl := strings.Fields(line)
			if len(fl) < 10 || fl[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, lp, ok := strings.Cut(fl[1], ":")
			if v, err := strconv.ParseUint(lp, 16, 16); ok && err == nil && v == port {
				inodes["socket:["+fl[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("nothing listens on port %d", port)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[l] {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process of this user holds the socket listening on port %d", port)
}

// procLaunch is how a process was started, read from /proc before it is killed so that it can be started alike
// (as cli/bench/leaderkill.go does for corral bench --kill-leader-every).
type procLaunch struct {
	argv   []string
	dir    string
	env    []string
	exe    string // /proc/PID/exe: the binary when argv[0] cannot be found
	stdout string // where its standard output went, if a file
}

func readProcLaunch(pid int) (procLaunch, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		return procLaunch{}, err
	}
	environ, err := os.ReadFile(proc + "/environ")
	if err != nil {
		return procLaunch{}, err
	}
	dir, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return procLaunch{}, err
	}
	l := procLaunch{argv: splitNUL(cmdline), dir: dir, env: splitNUL(environ)}
	l.exe, _ = os.Readlink(proc + "/exe")
	if out, err := os.Readlink(proc + "/fd/1"); err == nil && filepath.IsAbs(out) {
		if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
			l.stdout = out
		}
	}
	if len(l.argv) == 0 {
		return procLaunch{}, fmt.Errorf("%s/cmdline is empty", proc)
	}
	return l, nil
}

func splitNUL(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// binary is the program to start again: argv[0] resolved against the process's directory and PATH, else its
// /proc/PID/exe.
func (l procLaunch) binary() (string, error) {
	a0 := l.argv[0]
	var cands []string
	switch {
	case filepath.IsAbs(a0):
		cands = []string{a0}
	case strings.Contains(a0, "/"):
		cands = []string{filepath.Join(l.dir, a0)}
	default:
		path := ""
		for _, kv := range l.env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		for _, d := range filepath.SplitList(path) {
			if d == "" {
				d = "."
			}
			if !filepath.IsAbs(d) {
				d = filepath.Join(l.dir, d)
			}
			cands = append(cands, filepath.Join(d, a0))
		}
	}
	if l.exe != "" && !strings.HasSuffix(l.exe, " (deleted)") {
		cands = append(cands, l.exe)
	}
	for _, p := range cands {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("cannot find the program %q (started in %s) to restart it", a0, l.dir)
}

// relaunch starts l's process again (startDetached), its output appended to the file the old process wrote to after
// a line saying why, and appends the new pid to pidFile ("" for none): the caller's cleanup kills what it lists.
func relaunch(l procLaunch, bin, tag, why, pidFile string) (int, error) {
	log, err := openRestartLog(l, tag)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(log, "=== %s: %s: %s\n", time.Now().Format(time.RFC3339Nano), why, strings.Join(l.argv, " "))
	pid, err := startDetached(l, bin, log)
	_ = log.Close() // the child has its own copy
	if err != nil {
		return 0, err
	}
	if pidFile != "" {
		if f, err := os.OpenFile(pidFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintln(f, pid)
			_ = f.Close()
		}
	}
	return pid, nil
}

// openRestartLog appends to the file the stopped process wrote its output to, or to compare-TAG-restart.log in the
// temporary directory.
func openRestartLog(l procLaunch, tag string) (*os.File, error) {
	if l.stdout != "" {
		if f, err := os.OpenFile(l.stdout, os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			return f, nil
		}
	}
	return os.OpenFile(filepath.Join(os.TempDir(), "compare-"+tag+"-restart.log"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// startDetached starts bin with l's argv, directory and environment in a session of its own, output to log. The
// child outlives this program; a goroutine reaps it if it exits first.
func startDetached(l procLaunch, bin string, log *os.File) (int, error) {
	cmd := &exec.Cmd{Path: bin, Args: l.argv, Dir: l.dir, Env: l.env, Stdout: log, Stderr: log,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// waitProcessGone polls /proc/PID until the process is gone: no such process, or a zombie whose threads have all
// exited (a killed multi-threaded process keeps its files and ports until its last thread is gone).
func waitProcessGone(pid int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		if processGone(pid) {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("pid %d still runs %s after it was signalled to stop", pid, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X') {
		return false
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err != nil || len(tasks) <= 1
}
