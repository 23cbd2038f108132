package replica

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// PIDFile is the file in a controller's data dir that holds the id of the
// process that opened it last. The raft log's lock says that a data dir is
// in use; this file says by whom, so the error can name the process.
const PIDFile = "corral.pid"

// writePIDFile records this process as the data dir's user. It runs only
// once the raft log is open, i.e. with its lock held, so no other process
// writes it at the same time. Failing is not fatal: the file only improves
// an error message.
func writePIDFile(dataDir string, log *slog.Logger) {
	p := filepath.Join(dataDir, PIDFile)
	if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		log.Warn("could not write the pid file", "file", p, "err", err)
	}
}

// pidHolding returns " (pid N)" when dataDir's pid file names a live
// process, else "": an older binary, or a stale file whose process is gone,
// tells nothing reliable.
func pidHolding(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, PIDFile))
	if err != nil {
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return ""
	}
	if pid == os.Getpid() {
		return " (this process)"
	}
	// Signal 0 checks that the process exists; EPERM means it does, as another user.
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pid)
}
