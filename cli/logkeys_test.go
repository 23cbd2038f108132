package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A subsystem's logger that sets a key its parent set (the controller's
// "component", then raft's) writes the key once, with the later value, in
// JSON and in text; a record's own attribute replaces one from With too.
func TestUniqueKeys_OneValuePerKeyTheLaterWins(t *testing.T) {
	var buf bytes.Buffer
	root := slog.New(uniqueKeys{inner: slog.NewJSONHandler(&buf, nil)})
	ctrl := root.With("component", "controller", "node", 1)
	ctrl.With("component", "raft").Info("became leader", "term", 3)
	ctrl.Info("controller started", "node", 2)
	ctrl.WithGroup("g").Info("grouped", "component", "x")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	for _, l := range lines[:2] { // the third has one more inside its group
		require.Equal(t, 1, strings.Count(l, `"component"`), l)
		require.Equal(t, 1, strings.Count(l, `"node"`), l)
	}
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, "raft", first["component"])
	require.EqualValues(t, 1, first["node"])
	require.EqualValues(t, 3, first["term"])
	var second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.Equal(t, "controller", second["component"])
	require.EqualValues(t, 2, second["node"])
	var third map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &third))
	require.Equal(t, "controller", third["component"])
	require.Equal(t, map[string]any{"component": "x"}, third["g"])

	buf.Reset()
	text := slog.New(uniqueKeys{inner: slog.NewTextHandler(&buf, nil)})
	text.With("component", "controller").With("component", "transport").Info("peer connected")
	require.Equal(t, 1, strings.Count(buf.String(), "component="))
	require.Contains(t, buf.String(), "component=transport")

	require.False(t, root.Enabled(t.Context(), slog.LevelDebug), "the inner handler's level holds")
}
