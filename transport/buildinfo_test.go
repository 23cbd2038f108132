package transport

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestBuildInfo(t *testing.T) {
	b := Build()
	require.Equal(t, "dev", b.Version, "a test binary has no module version")
	require.Equal(t, runtime.Version(), b.GoVersion)

	old := Version
	Version = "v1.2.3"
	t.Cleanup(func() { Version = old })
	require.Equal(t, "v1.2.3", Build().Version, "-ldflags -X overrides the version")

	reg := prometheus.NewRegistry()
	RegisterBuildInfo(reg)
	want := `# HELP corral_build_info Always 1; the labels say which corral build this process runs.
# TYPE corral_build_info gauge
corral_build_info{commit="` + Build().CommitLabel() + `",go_version="` + runtime.Version() + `",version="v1.2.3"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "corral_build_info"))
}
