package integration

import (
	"bufio"
	"net/http"
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
