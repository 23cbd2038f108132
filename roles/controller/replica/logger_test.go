package replica

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The routine unstable-log line goes to debug; every other info line of
// raft stays at info.
func TestRaftLogger_RoutineUnstableLineIsDebug(t *testing.T) {
	var buf bytes.Buffer
	l := newRaftLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Infof(routineUnstable, 42)
	require.Empty(t, buf.String(), "logged at info")
	l.Infof("%x became leader at term %d", 1, 2)
	require.Contains(t, buf.String(), "1 became leader at term 2")

	buf.Reset()
	l = newRaftLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Infof(routineUnstable, 42)
	require.Contains(t, buf.String(), "level=DEBUG")
	require.Contains(t, buf.String(), "entry at index 42 missing from unstable log")
}

// The format is matched exactly: if our copy of raft words it otherwise,
// this fails rather than letting the line back to info unnoticed.
func TestRaftLogger_RoutineUnstableFormatIsRafts(t *testing.T) {
	src, err := os.ReadFile("../../../third_party/raft/log_unstable.go")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(src), `u.logger.Infof("`+routineUnstable+`"`),
		"raft no longer logs %q with Infof", routineUnstable)
}
