package executor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// execDefaultLogRead is how much ReadLog returns when the caller sets no
// limit.
const execDefaultLogRead = 64 << 10

// ReadLog returns up to limit bytes of an allocation's "stdout" or
// "stderr" log from byte offset, and the offset to ask for next (to
// follow). offset < 0 asks for the last tail lines (tail <= 0: the last
// limit bytes).
//
// Only the current log file is read, never the rotated NAME.1...: a
// follower whose offset is past the end of the file (it was rotated)
// starts again at 0 of the new file, so output written to the rotated
// file after its last read is skipped.
func (e *Executor) ReadLog(id, stream string, offset int64, tail int, limit int) ([]byte, int64, error) {
	if stream != "stdout" && stream != "stderr" {
		return nil, 0, fmt.Errorf("unknown log stream %q: want stdout or stderr", stream)
	}
	path, err := e.logPath(id, stream)
	if err != nil {
		return nil, 0, err
	}
	if limit <= 0 {
		limit = execDefaultLogRead
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, max(offset, 0), nil // the task has not written yet
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("read log: %w", err)
	}
	size := st.Size()
	if offset < 0 {
		return execReadTail(f, size, tail, limit)
	}
	if offset > size {
		offset = 0
	}
	return execReadAt(f, offset, min(int64(limit), size-offset))
}

func (e *Executor) logPath(id, stream string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.runners[id]
	switch {
	case r == nil:
		return "", fmt.Errorf("unknown allocation %q on this worker", id)
	case r.dir == "":
		return "", fmt.Errorf("allocation %q never ran here: it has no logs", id)
	case r.logsGone:
		return "", fmt.Errorf("the logs of allocation %q were removed after %v", id, e.cfg.LogRetention)
	}
	return filepath.Join(r.dir, stream+".log"), nil
}

func execReadAt(f *os.File, offset, n int64) ([]byte, int64, error) {
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, offset, fmt.Errorf("read log: %w", err)
	}
	return buf[:got], offset + int64(got), nil
}

// execReadTail reads the last lines lines within the last limit bytes.
func execReadTail(f *os.File, size int64, lines, limit int) ([]byte, int64, error) {
	start := max(0, size-int64(limit))
	buf, next, err := execReadAt(f, start, size-start)
	if err != nil || lines <= 0 {
		return buf, next, err
	}
	return execLastLines(buf, lines, start > 0), next, nil
}

// execLastLines keeps the last n lines of b. When b starts mid-file and
// holds fewer lines, its first, partial line is dropped.
func execLastLines(b []byte, n int, partial bool) []byte {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end-- // the final newline ends the last line; it does not start one
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	if partial {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i+1 < len(b) {
			return b[i+1:]
		}
	}
	return b
}
