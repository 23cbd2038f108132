package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	m, err := parseMetrics(strings.NewReader(`# HELP corral_workers_heartbeats_total Heartbeats handled.
# TYPE corral_workers_heartbeats_total counter
corral_workers_heartbeats_total 12345
corral_workers_fencings_total{reason="session_timeout"} 2

corral_bad_value NaN-ish
corral_no_value
`))
	require.NoError(t, err)
	require.Equal(t, map[string]float64{
		"corral_workers_heartbeats_total":                         12345,
		`corral_workers_fencings_total{reason="session_timeout"}`: 2,
	}, m)
}

func TestWithout(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"a:1", "c:3"}, without([]string{"a:1", "b:2", "c:3"}, "b:2"))
	require.Empty(t, without([]string{"b:2"}, "b:2"))
}

func TestReadProcStats(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	self := readProcStats(os.Getpid())
	require.True(t, self.ok)
	require.Positive(t, self.rssBytes)
	require.False(t, readProcStats(-1).ok, "no such process")
}
