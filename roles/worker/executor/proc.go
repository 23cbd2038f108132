package executor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// execSup is one running `corral supervise` process.
type execSup struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events <-chan string // its stdout lines; closed at EOF
	stderr *execTail
	closed bool // stdin closed; owned by the runner goroutine
}

// spawn starts a supervisor for the runner's task.
func (r *execRunner) spawn() (*execSup, error) {
	if strings.TrimSpace(r.spec.Task.Command) == "" {
		return nil, errors.New("the task has no command")
	}
	taskDir, err := prepareAllocDirs(r.dir, r.cred)
	if err != nil {
		return nil, fmt.Errorf("allocation dir: %w", err)
	}
	argv := r.supervisorArgv()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = r.taskEnv() // the supervisor hands its environment to the task
	// The task inherits this working directory: it is how the task reaches
	// its own dir, whose parents it cannot traverse; a relative
	// Task.Workdir is relative to it.
	cmd.Dir = taskDir
	// Its own process group: a Ctrl-C meant for the worker must not kill
	// supervisors, which would skip the graceful stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &execSup{cmd: cmd, stderr: &execTail{max: 2048}}
	cmd.Stderr = s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("supervisor stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("supervisor stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	s.stdin, s.events = stdin, execLines(stdout)
	return s, nil
}

// execLines delivers r's lines until EOF, then drains the rest so that a
// writer is never blocked by a line too long to scan.
func execLines(rd io.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			ch <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, rd)
	}()
	return ch
}

func (r *execRunner) supervisorArgv() []string {
	cfg, t := r.e.cfg, r.spec.Task
	// Every flag is given, even empty: the supervisor's flags also read
	// CORRAL_* variables, and its environment is the job's.
	argv := append(slices.Clone(cfg.SupervisorCmd),
		"--stdout="+filepath.Join(r.dir, "stdout.log"),
		"--stderr="+filepath.Join(r.dir, "stderr.log"),
		"--workdir="+t.Workdir, // "": the inherited task dir
		"--max-log-bytes="+strconv.FormatInt(cfg.MaxLogBytes, 10),
		"--keep-logs="+strconv.Itoa(cfg.KeepLogs),
		"--refresh-timeout="+cfg.RefreshTimeout.String(),
		"--kill-timeout="+r.killTimeout().String(),
		"--lost-grace="+cfg.LostGrace.String())
	cgroup := ""
	if cfg.CgroupRoot != "" {
		cgroup = filepath.Join(cfg.CgroupRoot, r.id)
	}
	argv = append(argv, "--cgroup="+cgroup,
		"--cpu-millis="+strconv.FormatInt(t.Resources.CPUMillis, 10),
		"--memory-mb="+strconv.FormatInt(t.Resources.MemoryMB, 10))
	uid, gid, groups := "-1", "-1", ""
	if c := r.cred; c != nil {
		gs := make([]string, len(c.Groups))
		for i, g := range c.Groups {
			gs[i] = strconv.FormatUint(uint64(g), 10)
		}
		uid, gid = strconv.FormatUint(uint64(c.Uid), 10), strconv.FormatUint(uint64(c.Gid), 10)
		groups = strings.Join(gs, ",")
	}
	argv = append(argv, "--uid="+uid, "--gid="+gid, "--groups="+groups)
	argv = append(argv, "--", r.command)
	return append(argv, t.Args...)
}

// taskEnv is the task's own environment: the worker's is not inherited
// (it may hold credentials: CORRAL_API_TOKEN, CORRAL_JOIN_TOKEN...),
// except PATH so that bare command names work.
func (r *execRunner) taskEnv() []string {
	vars := make(map[string]string, len(r.spec.Task.Env)+3)
	if p, ok := os.LookupEnv("PATH"); ok {
		vars["PATH"] = p
	}
	for k, v := range r.spec.Task.Env {
		vars[k] = v
	}
	vars["CORRAL_ALLOC_ID"] = r.id
	vars["CORRAL_JOB"] = r.spec.Job
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

func (s *execSup) send(line string) {
	if s.closed {
		return
	}
	// An error means the supervisor is gone; its exit is seen on stdout.
	_, _ = io.WriteString(s.stdin, line+"\n")
}

func (s *execSup) closeStdin() {
	if !s.closed {
		s.closed = true
		_ = s.stdin.Close()
	}
}

// execTail keeps the last max bytes written to it: a supervisor's stderr,
// to explain why it died.
type execTail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *execTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = slices.Clone(t.buf[over:])
	}
	return len(p), nil
}

// suffix is ": <stderr>" or "" when the supervisor said nothing.
func (t *execTail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(t.buf)); s != "" {
		return ": " + s
	}
	return ""
}
