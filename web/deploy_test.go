package web

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// schedulerMetrics are the jobs issue's series, not yet in docs/METRICS.md;
// the deploy files use them so the dashboard is ready when they land.
var schedulerMetrics = []string{
	"corral_scheduler_placements_total",
	"corral_scheduler_evaluations_total",
	"corral_scheduler_evaluation_duration_seconds",
	"corral_scheduler_allocations",
	"corral_scheduler_pending_evaluations",
}

var metricRE = regexp.MustCompile(`\bcorral_[a-z0-9_]+`)

// documentedMetrics reads every corral_ name from docs/METRICS.md, so a
// renamed metric breaks this test instead of silently emptying a panel.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range metricRE.FindAllString(string(b), -1) {
		known[m] = true
	}
	for _, m := range schedulerMetrics {
		known[m] = true
	}
	return known
}

// checkMetrics fails for any corral_ name in expr that is not documented
// (a histogram's _bucket, _sum and _count series count as its name).
func checkMetrics(t *testing.T, where, expr string, known map[string]bool, used map[string]bool) {
	t.Helper()
	for _, m := range metricRE.FindAllString(expr, -1) {
		base := m
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(m, suf); ok && known[b] {
				base = b
			}
		}
		if !known[base] {
			t.Errorf("%s uses %s, which docs/METRICS.md does not list", where, m)
		}
		used[base] = true
	}
	if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") ||
		strings.Count(expr, "[") != strings.Count(expr, "]") {
		t.Errorf("%s: unbalanced brackets in %q", where, expr)
	}
}

type alertRules struct {
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

func TestPrometheusAlerts(t *testing.T) {
	b, err := os.ReadFile("../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true) // a misspelt key would be ignored by Prometheus' loader too late
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("alerts.yml is not valid rule YAML: %v", err)
	}
	known, used := documentedMetrics(t), map[string]bool{}
	names := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			if r.Alert == "" || r.Expr == "" || names[r.Alert] {
				t.Errorf("%s: every rule needs a unique alert name and an expr", where)
			}
			names[r.Alert] = true
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a severity label, a summary and a description", where)
			}
			checkMetrics(t, where, r.Expr, known, used)
		}
	}
	// The issue asks for these four situations to be covered.
	for _, m := range []string{"corral_raft_is_leader", "corral_raft_commit_index", "corral_workers_fencings_total", "corral_raft_apply_duration_seconds"} {
		if !used[m] {
			t.Errorf("no alert uses %s", m)
		}
	}
}

func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../deploy/grafana/corral.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("corral.json is not valid JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatal("dashboard needs a title, a uid and panels")
	}
	known, used := documentedMetrics(t), map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkMetrics(t, "panel "+p.Title, tg.Expr, known, used)
		}
	}
	for _, m := range schedulerMetrics {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
	var missing []string
	for _, m := range []string{"corral_raft_has_leader", "corral_raft_is_leader", "corral_workers", "corral_leases", "corral_watchers",
		"corral_http_request_duration_seconds", "corral_raft_apply_duration_seconds"} {
		if !used[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("dashboard lacks %v", missing)
	}
}
