package transport

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is the release version. Releases set it at link time:
//
//	go build -ldflags "-X github.com/corral-dev/corral/transport.Version=v1.2.3"
//
// Empty means "use the module version Go recorded", which is "dev" for a
// build from a checkout. It lives in transport because the worker protocol
// carries it (Register.Version) and every role can import transport.
var Version = ""

// BuildInfo describes the running binary: what `corral version` prints,
// GET /v1/cluster shows under "build" and corral_build_info labels.
type BuildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`   // vcs.revision, empty when built outside a checkout
	Modified  bool   `json:"modified,omitempty"` // vcs.modified: the checkout had uncommitted changes
	GoVersion string `json:"go_version"`
}

// Build reads the binary's build information (runtime/debug.ReadBuildInfo);
// Version overrides the module version.
func Build() BuildInfo {
	b := BuildInfo{Version: Version, GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if ok {
		if b.Version == "" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	// go build from a checkout records "(devel)"; go test records nothing.
	if b.Version == "" || b.Version == "(devel)" {
		b.Version = "dev"
	}
	return b
}

// CommitLabel is the commit as one word: the revision, with "-dirty" when
// the checkout had uncommitted changes, or "unknown".
func (b BuildInfo) CommitLabel() string {
	c := b.Commit
	if c == "" {
		c = "unknown"
	}
	if b.Modified {
		c += "-dirty"
	}
	return c
}

// RegisterBuildInfo registers the corral_build_info gauge (always 1, the
// build in its labels) with reg, so dashboards can tell which binary each
// node runs. Call it once per registry: where the registry is created.
func RegisterBuildInfo(reg prometheus.Registerer) {
	b := Build()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "corral_build_info",
		Help:        "Always 1; the labels say which corral build this process runs.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.CommitLabel(), "go_version": b.GoVersion},
	})
	g.Set(1)
	reg.MustRegister(g)
}
