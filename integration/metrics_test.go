package integration

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// metricSum sums the samples on a node's /metrics whose lines keep
// accepts (0 when the node does not answer).
func metricSum(t *testing.T, n *node, keep func(line string) bool) float64 {
	t.Helper()
	var sum float64
	for _, line := range metricLines(n, keep) {
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// metricLines returns the lines of a node's /metrics that keep accepts
// (none when the node does not answer).
func metricLines(n *node, keep func(line string) bool) []string {
	resp, err := http.Get(n.endpoint() + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); keep(line) {
			out = append(out, line)
		}
	}
	return out
}

// metricValue sums every sample of a metric family on a node's /metrics.
func metricValue(t *testing.T, n *node, name string) float64 {
	t.Helper()
	return metricSum(t, n, func(line string) bool {
		rest, ok := strings.CutPrefix(line, name)
		return ok && (rest == "" || rest[0] == ' ' || rest[0] == '{')
	})
}

// metricLabeled sums the samples of a metric family on a node's /metrics
// that carry label="value" (a value without "}" or ",").
func metricLabeled(t *testing.T, n *node, name, label, value string) float64 {
	t.Helper()
	want := label + "=" + strconv.Quote(value)
	return metricSum(t, n, func(line string) bool {
		labels, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			return false
		}
		labels, _, ok = strings.Cut(labels, "}")
		return ok && slices.Contains(strings.Split(labels, ","), want)
	})
}

// rejected is how many peers a controller refused for reason
// (corral_transport_peer_rejected_total).
func rejected(t *testing.T, n *node, reason string) float64 {
	t.Helper()
	return metricLabeled(t, n, "corral_transport_peer_rejected_total", "reason", reason)
}
