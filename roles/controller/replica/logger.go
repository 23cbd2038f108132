package replica

import (
	"context"
	"fmt"
	"log/slog"
	"os"
)

// routineUnstable is what raft logs, at info level, whenever a write's
// acknowledgement finds its entries already gone from the unstable log:
// with asynchronous storage writes, a Ready that only moves the commit
// index attests the same last entry as the append before it, and the
// second acknowledgement finds nothing left to release. Under load that
// is one line per few dozen entries (65,848 on a leader for a million
// puts), none of them news, so it goes to debug.
const routineUnstable = "entry at index %d missing from unstable log; ignoring"

// infoLevel is the level for raft's Infof(format): info, save for the
// routine line above.
func infoLevel(format string) slog.Level {
	if format == routineUnstable {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// raftLogger adapts slog to raft.Logger. Raft's debug chatter stays at
// debug level; Fatal and Panic keep raft's semantics.
type raftLogger struct{ l *slog.Logger }

func newRaftLogger(l *slog.Logger) *raftLogger { return &raftLogger{l: l.With("component", "raft")} }

func (r *raftLogger) logf(level slog.Level, format string, v ...any) {
	if r.l.Enabled(context.Background(), level) {
		r.l.Log(context.Background(), level, fmt.Sprintf(format, v...))
	}
}

func (r *raftLogger) Debug(v ...any)                   { r.logf(slog.LevelDebug, "%s", fmt.Sprint(v...)) }
func (r *raftLogger) Debugf(format string, v ...any)   { r.logf(slog.LevelDebug, format, v...) }
func (r *raftLogger) Info(v ...any)                    { r.logf(slog.LevelInfo, "%s", fmt.Sprint(v...)) }
func (r *raftLogger) Infof(format string, v ...any)    { r.logf(infoLevel(format), format, v...) }
func (r *raftLogger) Warning(v ...any)                 { r.logf(slog.LevelWarn, "%s", fmt.Sprint(v...)) }
func (r *raftLogger) Warningf(format string, v ...any) { r.logf(slog.LevelWarn, format, v...) }
func (r *raftLogger) Error(v ...any)                   { r.logf(slog.LevelError, "%s", fmt.Sprint(v...)) }
func (r *raftLogger) Errorf(format string, v ...any)   { r.logf(slog.LevelError, format, v...) }

func (r *raftLogger) Fatal(v ...any) {
	r.logf(slog.LevelError, "%s", fmt.Sprint(v...))
	os.Exit(1)
}

func (r *raftLogger) Fatalf(format string, v ...any) {
	r.logf(slog.LevelError, format, v...)
	os.Exit(1)
}

func (r *raftLogger) Panic(v ...any) { panic(fmt.Sprint(v...)) }

func (r *raftLogger) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
