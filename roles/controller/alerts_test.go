package controller

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/corral-dev/corral/transport"
)

// promRules is the part of a Prometheus rules file the test reads.
type promRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var alertMetricRE = regexp.MustCompile(`\bcorral_[a-z0-9_]+`)

// Every metric deploy/prometheus/alerts.yml alerts on is one a real
// controller (with a TLS dir and an HTTPS pair, as in production) exports:
// a renamed metric must break this test, not silently disarm an alert.
// (web's TestPrometheusAlerts checks the same names against
// docs/METRICS.md.)
func TestAlertRulesNameRegisteredMetrics(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "alerts.yml"))
	require.NoError(t, err)
	var rules promRules
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&rules))

	tlsDir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1"}))
	c, _ := startTLSController(t, tlsDir)
	// A vector with no series yet is not gathered, so ask the registry
	// itself: registering another metric under a name it holds fails.
	exported := func(name string) bool {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "alert rule probe"})
		err := c.Registry().Register(probe)
		if err == nil {
			c.Registry().Unregister(probe)
			return false
		}
		require.ErrorContains(t, err, "previously registered descriptor with the same fully-qualified name")
		return true
	}
	registered := func(name string) bool {
		if exported(name) {
			return true
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} { // a histogram's series
			if base, ok := strings.CutSuffix(name, suf); ok && exported(base) {
				return true
			}
		}
		return false
	}
	require.False(t, registered("corral_no_such_metric"), "the probe must tell")

	alerts := map[string]map[string]string{} // alert -> its labels
	exprs := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: a rule without an alert name", g.Name)
			require.NotContains(t, alerts, r.Alert, "alert %s defined twice", r.Alert)
			alerts[r.Alert], exprs[r.Alert] = r.Labels, r.Expr
			names := alertMetricRE.FindAllString(r.Expr, -1)
			require.NotEmpty(t, names, "alert %s names no corral metric", r.Alert)
			for _, m := range names {
				require.True(t, registered(m), "alert %s uses %s, which a controller does not export", r.Alert, m)
			}
		}
	}

	// The certificate and refusal alerts.
	for name, severity := range map[string]string{
		"CorralCertificateExpiresSoon":     "warning",
		"CorralCertificateExpiresVerySoon": "critical",
		"CorralPeersRefused":               "warning",
		"CorralWorkerImpersonation":        "critical",
	} {
		require.Contains(t, alerts, name)
		require.Equal(t, severity, alerts[name]["severity"], name)
	}
	require.Contains(t, exprs["CorralCertificateExpiresSoon"], transport.CertExpiryMetric)
	require.Contains(t, exprs["CorralCertificateExpiresVerySoon"], transport.CertExpiryMetric)
	require.Contains(t, exprs["CorralPeersRefused"], "increase(corral_transport_peer_rejected_total[10m]) > 0")
	require.Contains(t, exprs["CorralWorkerImpersonation"], "increase(corral_workers_impersonations_refused_total[10m]) > 0")
}
