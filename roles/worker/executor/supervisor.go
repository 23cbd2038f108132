package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// SupervisorConfig describes one task run by `corral supervise`, the small
// per-allocation process that sits between a worker and its task.
//
// Why a separate process: a task must never outlive its supervision. If the
// worker dies (kill -9) the supervisor's stdin reaches EOF at once; if the
// worker hangs (SIGSTOP, a deadlock) it stops sending refreshes. Either way
// the supervisor kills the task's whole process group well before the
// controller's session timeout can hand the work to another worker.
type SupervisorConfig struct {
	Command string
	Args    []string
	Env     []string
	Workdir string
	// Stdout and Stderr are log file paths, capped at MaxLogBytes each with
	// KeepLogs rotated files.
	Stdout, Stderr string
	MaxLogBytes    int64
	KeepLogs       int
	// RefreshTimeout: without a refresh from the worker for this long, the
	// task is killed.
	RefreshTimeout time.Duration
	// KillTimeout is the grace between SIGTERM and SIGKILL for a requested
	// stop. When supervision is lost the grace is capped at LostGrace.
	KillTimeout time.Duration
	LostGrace   time.Duration
	// Cgroup, when set, is a cgroup v2 directory created for the task with
	// CPUMillis and MemoryMB as its limits (cgroup.go); the task starts
	// inside it (clone into cgroup) and it is removed after the task.
	Cgroup    string
	CPUMillis int64
	MemoryMB  int64
	// Credential, when set, runs the task as that user (uid, gid and
	// supplementary groups); the supervisor itself stays the worker's user,
	// so the task cannot touch its logs or its cgroup.
	Credential *syscall.Credential
	// Signal sends sig to pid (negative: a process group); nil is
	// syscall.Kill. Tests inject failures through it: a kill that fails
	// (a worker without CAP_KILL signalling another user's task) must be
	// reported, never taken for a stop.
	Signal func(pid int, sig syscall.Signal) error
}

// Supervisor protocol. The worker writes one command per line to the
// supervisor's stdin; the supervisor writes one event per line to stdout.
const (
	SupRefresh   = "refresh" // worker is alive
	SupStop      = "stop"    // graceful stop: SIGTERM, SIGKILL after KillTimeout
	SupEvStarted = "started" // "started PID"
	SupEvExited  = "exited"  // "exited CODE" (-1 for a signal) then the supervisor exits
	SupEvFailed  = "failed"  // "failed REASON": the task could not start
	SupEvLost    = "lost"    // "lost REASON": supervision lost, task killed
	// "stopfailed REASON": the task could not be signalled and still runs;
	// the supervisor keeps waiting for it and still reports its exit.
	SupEvStopFailed = "stopfailed"
)

// Supervise runs the task and polices it until it exits. It returns the
// task's exit code (-1 when killed by a signal).
func Supervise(ctx context.Context, cfg SupervisorConfig, in io.Reader, out io.Writer) (int, error) {
	if cfg.LostGrace <= 0 || cfg.LostGrace > cfg.KillTimeout {
		cfg.LostGrace = min(time.Second, max(cfg.KillTimeout, 100*time.Millisecond))
	}
	stdout, err := openRotating(cfg.Stdout, cfg.MaxLogBytes, cfg.KeepLogs)
	if err != nil {
		fmt.Fprintf(out, "%s %v\n", SupEvFailed, err)
		return -1, err
	}
	defer stdout.Close()
	stderr, err := openRotating(cfg.Stderr, cfg.MaxLogBytes, cfg.KeepLogs)
	if err != nil {
		fmt.Fprintf(out, "%s %v\n", SupEvFailed, err)
		return -1, err
	}
	defer stderr.Close()

	started := make(chan *exec.Cmd, 1)
	exited := make(chan error, 1)
	go runTask(cfg, stdout, stderr, started, exited)
	cmd := <-started
	if cmd == nil {
		err := <-exited
		fmt.Fprintf(out, "%s %v\n", SupEvFailed, err)
		return -1, err
	}
	fmt.Fprintf(out, "%s %d\n", SupEvStarted, cmd.Process.Pid)

	cmds := readCommands(in)
	code := police(ctx, cfg, cmd, cmds, exited, out)
	fmt.Fprintf(out, "%s %d\n", SupEvExited, code)
	return code, nil
}

// runTask starts the task in its own process group and waits for it on one
// locked OS thread: Pdeathsig fires when the *thread* that started the child
// dies, so the thread must live as long as the task.
func runTask(cfg SupervisorConfig, stdout, stderr io.Writer, started chan<- *exec.Cmd, exited chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env, cmd.Dir = cfg.Env, cfg.Workdir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cfg.Credential}
	if cfg.Cgroup != "" {
		fd, err := openTaskCgroup(cfg)
		if err != nil {
			started <- nil
			exited <- err
			return
		}
		defer func() {
			_ = syscall.Close(fd)
			_ = os.Remove(cfg.Cgroup) // empty once the task's group is gone
		}()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	if err := cmd.Start(); err != nil {
		started <- nil
		exited <- fmt.Errorf("start %s: %w", cfg.Command, err)
		return
	}
	started <- cmd
	exited <- cmd.Wait()
}

// openTaskCgroup creates the task's cgroup with its limits and opens it
// for CLONE_INTO_CGROUP, so the task never runs a moment unlimited.
func openTaskCgroup(cfg SupervisorConfig) (int, error) {
	if err := taskCgroupLimits(cfg.Cgroup, cfg.CPUMillis, cfg.MemoryMB); err != nil {
		return -1, fmt.Errorf("set up the task's cgroup %s: %w", cfg.Cgroup, err)
	}
	fd, err := syscall.Open(cfg.Cgroup, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the task's cgroup %s: %w", cfg.Cgroup, err)
	}
	return fd, nil
}

func readCommands(in io.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// police waits for the task to exit, killing it on a stop request, on lost
// supervision (EOF or no refresh) or when ctx ends. When the task cannot be
// killed it says so and keeps waiting: reporting an exit, or leaving, while
// the task runs on would tell the worker it stopped.
func police(ctx context.Context, cfg SupervisorConfig, cmd *exec.Cmd, cmds <-chan string, exited <-chan error, out io.Writer) int {
	deadline := time.NewTimer(cfg.RefreshTimeout)
	defer deadline.Stop()
	done := ctx.Done()
	for {
		var code int
		var err error
		select {
		case err := <-exited:
			return exitCode(err)
		case line, ok := <-cmds:
			switch {
			case !ok:
				fmt.Fprintf(out, "%s worker connection closed\n", SupEvLost)
				cmds, done = nil, nil // nobody left to obey: this was the last try
				deadline.Stop()
				code, err = stopGroup(cfg, cmd, cfg.LostGrace, exited)
			case line == SupStop:
				code, err = stopGroup(cfg, cmd, cfg.KillTimeout, exited)
			case line == SupRefresh:
				if !deadline.Stop() {
					select {
					case <-deadline.C:
					default: // already drained by a lost-supervision stop
					}
				}
				deadline.Reset(cfg.RefreshTimeout)
				continue
			default:
				continue
			}
		case <-deadline.C:
			fmt.Fprintf(out, "%s no refresh from the worker for %v\n", SupEvLost, cfg.RefreshTimeout)
			code, err = stopGroup(cfg, cmd, cfg.LostGrace, exited)
		case <-done:
			done = nil
			code, err = stopGroup(cfg, cmd, cfg.LostGrace, exited)
		}
		if err == nil {
			return code
		}
		fmt.Fprintf(out, "%s %v\n", SupEvStopFailed, err)
	}
}

// stopGroup sends SIGTERM to the task's process group, then SIGKILL after
// grace, and returns the exit code once the task is gone. It returns an
// error, without waiting, when the group cannot be signalled.
func stopGroup(cfg SupervisorConfig, cmd *exec.Cmd, grace time.Duration, exited <-chan error) (int, error) {
	signal := cfg.Signal
	if signal == nil {
		signal = syscall.Kill
	}
	pgid := cmd.Process.Pid
	if err := groupSignal(signal, pgid, syscall.SIGTERM); err != nil {
		// SIGKILL needs the same permission, but try it before giving up.
		if kerr := groupSignal(signal, pgid, syscall.SIGKILL); kerr != nil {
			return 0, kerr
		}
		return exitCode(<-exited), nil
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-exited:
		_ = groupSignal(signal, pgid, syscall.SIGKILL) // children that ignored SIGTERM
		return exitCode(err), nil
	case <-t.C:
		if err := groupSignal(signal, pgid, syscall.SIGKILL); err != nil {
			return 0, err
		}
		return exitCode(<-exited), nil
	}
}

// groupSignal signals the process group pgid; a group already gone is no
// error (the task is exiting on its own).
func groupSignal(signal func(int, syscall.Signal) error, pgid int, sig syscall.Signal) error {
	err := signal(-pgid, sig)
	switch {
	case err == nil, errors.Is(err, syscall.ESRCH):
		return nil
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("cannot send %v to the task's process group %d: %w; the worker lacks permission to signal "+
			"the task's user: give the worker CAP_KILL or run it as root, and kill the task by hand", sig, pgid, err)
	}
	return fmt.Errorf("cannot send %v to the task's process group %d: %w", sig, pgid, err)
}

// exitCode is a task's exit status as shells report it: its exit code,
// or 128 plus the signal that killed it (143 for SIGTERM, 137 for
// SIGKILL), where Go says -1. A stopped task then shows 143, not -1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// ParseCredential builds a SupervisorConfig.Credential from the
// supervisor's --uid, --gid and --groups ("1,2,3") flags; uid < 0 means
// none.
func ParseCredential(uid, gid int64, groups string) (*syscall.Credential, error) {
	if uid < 0 {
		return nil, nil
	}
	if uid > math.MaxUint32 || gid < 0 || gid > math.MaxUint32 {
		return nil, fmt.Errorf("bad task uid %d or gid %d", uid, gid)
	}
	c := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	for _, g := range ParseList(groups) {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("bad task group %q", g)
		}
		c.Groups = append(c.Groups, uint32(n))
	}
	return c, nil
}

// SuperviseMain is the body of the hidden `corral supervise` command: the
// worker talks to it over stdin/stdout.
func SuperviseMain(cfg SupervisorConfig) int {
	code, err := Supervise(context.Background(), cfg, os.Stdin, os.Stdout)
	if err != nil {
		return 127
	}
	if code < 0 {
		return 128
	}
	return code
}
