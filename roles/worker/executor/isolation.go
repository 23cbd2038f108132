package executor

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Task isolation. A worker running as root starts every task as an
// unprivileged user (Config.TaskUser, "nobody" for a real worker); a job
// may name another user (task.user) only if Config.AllowedTaskUsers lists
// it. A worker that is not root cannot switch users: its tasks run as its
// own user and a job naming another one fails. Config.AllowedCommands
// restricts the commands a worker runs.
//
// Directories (all made by the executor as the worker's user):
//
//	Dir/                 0700 worker   allocation root
//	Dir/<id>/            0700 worker   stdout.log, stderr.log (+ rotated)
//	Dir/<id>/task/       0700 task     the task's directory (default workdir)
//
// The task cannot traverse Dir or Dir/<id>: it reaches its own directory
// only because its supervisor, started in it, hands it down as the
// working directory. So tasks never see the worker's files, the logs the
// worker reads are not in a directory a task could plant a symlink in, and
// two tasks running as the same user still cannot reach each other's
// directories.

// TaskDirName is the task's own directory inside its allocation dir.
const TaskDirName = "task"

// taskUserPolicy decides which user a task runs as.
type taskUserPolicy struct {
	root    bool     // the worker runs as root and can switch users
	self    string   // the worker's own user name
	def     string   // root only: the user of tasks whose job names none ("" = self)
	allowed []string // root only: the other users jobs may name
}

// choose returns the user a task asking for requested ("" = the default)
// runs as.
func (p taskUserPolicy) choose(requested string) (string, error) {
	if !p.root {
		if requested == "" || requested == p.self {
			return p.self, nil
		}
		return "", fmt.Errorf("task.user %q cannot be used: this worker runs as %q (not root), so its tasks run as %q only",
			requested, p.self, p.self)
	}
	def := p.def
	if def == "" {
		def = p.self
	}
	if requested == "" || requested == def {
		return def, nil
	}
	for _, u := range p.allowed {
		if u == requested {
			return requested, nil
		}
	}
	list := "none"
	if len(p.allowed) > 0 {
		list = strings.Join(p.allowed, ",")
	}
	return "", fmt.Errorf("task.user %q is not allowed on this worker (--allowed-task-users: %s; default task user %q)",
		requested, list, def)
}

// taskCredential returns the credential that runs a task as name, with its
// primary group and supplementary groups; nil when name is the worker's
// own user (nothing to switch).
func (p taskUserPolicy) credential(name string) (*syscall.Credential, error) {
	if !p.root || name == p.self {
		return nil, nil
	}
	return lookupCredential(name)
}

// lookupCredential resolves a user name (or numeric uid) with os/user.
func lookupCredential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if _, convErr := strconv.Atoi(name); convErr == nil && errors.As(err, &unknown) {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("task user %q: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("task user %q has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("task user %q: groups: %w", name, err)
	}
	for _, g := range ids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("task user %q: bad group id %q", name, g)
		}
		if uint32(n) != cred.Gid {
			cred.Groups = append(cred.Groups, uint32(n))
		}
	}
	return cred, nil
}

// currentUserName is the name of the user this process runs as (its uid
// when it has no name).
func currentUserName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Geteuid())
}

// checkCommand resolves a task's command as its supervisor would (PATH
// from the task's environment; a relative path with a slash from the
// task's workdir) and checks it against the allowed globs (path.Match on
// the resolved path). With no globs every command is allowed and command
// is returned as is. The resolved path is what the supervisor runs, so
// the task's PATH cannot swap it for another file afterwards.
func checkCommand(allowed []string, command, pathEnv, workdir string) (string, error) {
	if len(allowed) == 0 {
		return command, nil
	}
	resolved, err := resolveCommand(command, pathEnv, workdir)
	if err != nil {
		return "", fmt.Errorf("command %q is not allowed on this worker: %v (--allowed-commands: %s)",
			command, err, strings.Join(allowed, ","))
	}
	for _, g := range allowed {
		if ok, err := path.Match(g, resolved); err == nil && ok {
			return resolved, nil
		}
	}
	return "", fmt.Errorf("command %q (%s) is not allowed on this worker: it matches none of --allowed-commands: %s",
		command, resolved, strings.Join(allowed, ","))
}

// resolveCommand is the absolute, cleaned path of the file command names.
func resolveCommand(command, pathEnv, workdir string) (string, error) {
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) {
			command = filepath.Join(workdir, command)
		}
		return filepath.Clean(command), nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative PATH entry would resolve in the task's dir
		}
		p := filepath.Join(d, command)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return filepath.Clean(p), nil
		}
	}
	return "", errors.New("not found in the task's PATH")
}

// ParseList splits a comma-separated flag value, dropping blanks.
func ParseList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ValidateGlobs reports the first malformed glob.
func ValidateGlobs(globs []string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("bad glob %q: %w", g, err)
		}
	}
	return nil
}

// prepareAllocDirs makes the allocation dir (the worker's, for the logs)
// and the task's dir inside it, owned by the task's user when it has one.
func prepareAllocDirs(dir string, cred *syscall.Credential) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	taskDir := filepath.Join(dir, TaskDirName)
	if err := os.Mkdir(taskDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	st, err := os.Lstat(taskDir)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", taskDir)
	}
	if cred != nil {
		if err := os.Lchown(taskDir, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(taskDir, 0o700); err != nil {
		return "", err
	}
	return taskDir, nil
}
