package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file in a worker's data dir that a running worker holds
// an exclusive flock on, and writes its pid into. Two workers on one data
// dir would run under the same id and write the same allocation dirs; the
// second one must refuse to start and say which process has the dir.
const LockFile = "worker.lock"

// dirLock is a held LockFile; the kernel releases it when the file is
// closed or the process dies, so a crash leaves no stale lock.
type dirLock struct{ f *os.File }

func lockDataDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	p := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := lockHolder(f)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s: in use by another process%s; stop that process first, or give this worker another --data-dir",
				dir, holder)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	// The pid only makes a second worker's error useful; failing to write it is not fatal.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// lockHolder returns " (pid N)" from the lock file's content, or "".
func lockHolder(f *os.File) string {
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	switch {
	case err != nil || pid <= 0:
		return ""
	case pid == os.Getpid():
		return " (this process)"
	}
	return fmt.Sprintf(" (pid %d)", pid)
}

func (l *dirLock) release() {
	if l != nil {
		_ = l.f.Close()
	}
}
