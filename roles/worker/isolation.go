package worker

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/roles/worker/executor"
)

// isolation keeps tasks away from the worker's files and says how tasks
// run: the data dir (worker id, joined TLS files, allocation dirs and
// logs) and the TLS dir (the node key) become 0700, so a task, which runs
// as another user (executor/isolation.go), can read neither.
func (w *Worker) isolation() {
	for _, dir := range []string{w.cfg.DataDir, w.cfg.TLSDir, filepath.Join(w.cfg.DataDir, JoinTLSDir)} {
		if dir == "" {
			continue
		}
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() || st.Mode().Perm() == 0o700 {
			continue
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			w.log.Warn("cannot make a worker dir private: tasks may read it", "dir", dir, "err", err)
			continue
		}
		w.log.Info("made a worker dir private (0700) so that tasks cannot read it", "dir", dir, "was", st.Mode().Perm().String())
	}
	if os.Geteuid() == 0 {
		w.log.Info("tasks run as an unprivileged user", "task_user", w.cfg.TaskUser,
			"allowed_task_users", strings.Join(w.cfg.AllowedTaskUsers, ","))
	} else {
		w.log.Info("this worker is not root: tasks run as its own user and jobs cannot name another", "uid", os.Geteuid())
	}
	if len(w.cfg.AllowedCommands) == 0 {
		w.log.Warn("every command is allowed: --allowed-commands is not set, so a job may run any program as the task user")
	} else {
		w.log.Info("tasks may run only the allowed commands", "allowed_commands", strings.Join(w.cfg.AllowedCommands, ","))
	}
	if err := executor.ValidateGlobs(w.cfg.AllowedCommands); err != nil {
		w.log.Error("bad --allowed-commands: every task will fail", "err", err)
	}
}
