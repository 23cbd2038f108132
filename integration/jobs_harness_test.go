package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// itAlloc is an allocation as the API returns it.
type itAlloc struct {
	ID       string `json:"id"`
	Job      string `json:"job"`
	Worker   string `json:"worker"`
	Epoch    uint64 `json:"epoch"`
	State    string `json:"state"`
	Desired  string `json:"desired"`
	ExitCode *int   `json:"exit_code"`
	Restarts int    `json:"restarts"`
	Message  string `json:"message"`
}

// httpJSON sends a request to one controller and decodes the JSON answer;
// 0 means no answer. It is safe on any goroutine (it fails the test only
// for a request it cannot even build, which is a bug in the test).
func httpJSON(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Corral-Client", "integration-test") // writes need it (browser safety)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0 // the controller died mid-answer: like no answer
	}
	if out != nil && len(b) > 0 {
		_ = json.Unmarshal(b, out)
	}
	return resp.StatusCode
}

// submitJob posts a job spec to any controller that takes it.
func (c *cluster) submitJob(spec string) {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		for _, n := range c.nodes {
			if n.cmd == nil {
				continue
			}
			var out map[string]any
			code := httpJSON(c.t, "POST", n.endpoint()+"/v1/jobs", spec, &out)
			if code == 400 {
				c.t.Fatalf("job spec refused: %v", out)
			}
			if code == 200 {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "no controller accepted the job")
}

// allocs lists a job's allocations from the first live controller that
// answers (linearizable reads).
func (c *cluster) allocs(job string) ([]itAlloc, bool) {
	var eps []string
	for _, n := range c.nodes {
		if n.cmd != nil {
			eps = append(eps, n.endpoint())
		}
	}
	return allocsFrom(c.t, eps, job)
}

// allocsFrom is allocs over a fixed list of endpoints, for goroutines that
// must not look at the cluster's processes while the test kills them.
func allocsFrom(t *testing.T, endpoints []string, job string) ([]itAlloc, bool) {
	for _, ep := range endpoints {
		var out struct {
			Allocations []itAlloc `json:"allocations"`
		}
		if httpJSON(t, "GET", ep+"/v1/allocations?job="+job, "", &out) == 200 {
			return out.Allocations, true
		}
	}
	return nil, false
}

// waitAllocs polls until cond holds for the job's allocations.
func (c *cluster) waitAllocs(job, what string, timeout time.Duration, cond func([]itAlloc) bool) []itAlloc {
	c.t.Helper()
	var last []itAlloc
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if as, ok := c.allocs(job); ok {
			last = as
			if cond(as) {
				return as
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("job %s: %s did not happen within %s; allocations: %+v", job, what, timeout, last)
	return nil
}

func running(as []itAlloc) []itAlloc {
	var out []itAlloc
	for _, a := range as {
		if a.State == "running" {
			out = append(out, a)
		}
	}
	return out
}

func describe(as []itAlloc) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%s@%s/%d:%s", a.ID[:6], a.Worker, a.Epoch, a.State))
	}
	return strings.Join(parts, " ")
}
