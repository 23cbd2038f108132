package integration

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// metricValue sums every sample of a metric family on a node's /metrics.
func metricValue(t *testing.T, n *node, name string) float64 {
	t.Helper()
	resp, err := http.Get(n.endpoint() + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest != "" && rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// metricLabeled sums the samples of a metric family on a node's /metrics
// that carry label="value".
func metricLabeled(t *testing.T, n *node, name, label, value string) float64 {
	t.Helper()
	resp, err := http.Get(n.endpoint() + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	want := label + "=" + strconv.Quote(value)
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		labels, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, _, ok = strings.Cut(labels, "}")
		if !ok || !slices.Contains(strings.Split(labels, ","), want) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// rejected is how many peers a controller refused for reason
// (corral_transport_peer_rejected_total).
func rejected(t *testing.T, n *node, reason string) float64 {
	t.Helper()
	return metricLabeled(t, n, "corral_transport_peer_rejected_total", "reason", reason)
}
