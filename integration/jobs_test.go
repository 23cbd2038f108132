package integration

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countProcs counts the processes whose command line starts with marker
// (not their supervisors, whose arguments contain it too).
func countProcs(t *testing.T, marker string) int {
	out, err := exec.Command("pgrep", "-f", "-c", "^"+marker).Output()
	if err != nil && len(out) == 0 {
		return 0 // pgrep exits 1 when nothing matches
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err)
	return n
}

// The leader is killed right after a 100-allocation job is submitted, in
// the middle of placing it: the new leader finishes the evaluation from the
// replicated state, and in the end exactly 100 allocations run, as exactly
// 100 processes, with no duplicate and none lost.
func TestJobs_LeaderFailoverDuringPlacementLeavesNoDuplicate(t *testing.T) {
	// The default session timeout, not the harness's 4 s: the kill lands
	// while both workers start 50 processes each, and on a loaded CI
	// machine (-race) a worker once needed more than 0.6 × 4 s to reach
	// the new leader and fenced itself. That is the self-fence margin's
	// business (worker failover tests); this test is about placement.
	c := newCluster(t, 3, "--tick-interval=50ms", "--session-timeout=10s")
	c.startAll()
	c.waitLeader(30 * time.Second)
	w1, w2 := c.newWorker("a"), c.newWorker("b")
	w1.start()
	w2.start()
	c.waitWorker(w1.id(), "alive", 30*time.Second)
	c.waitWorker(w2.id(), "alive", 30*time.Second)

	marker := fmt.Sprintf("9%08d", time.Now().UnixNano()%1e8)
	lead := c.waitLeader(30 * time.Second)
	spec := `{"name":"many","count":100,"task":{"command":"/bin/sleep","args":["` + marker + `"],"kill_timeout":"1s"}}`
	var out map[string]any
	require.Equal(t, 200, httpJSON(t, "POST", c.nodes[lead].endpoint()+"/v1/jobs", spec, &out), "%v", out)
	c.kill(lead)
	killedAt := time.Now()

	as := c.waitAllocs("many", "100 running", 120*time.Second, func(as []itAlloc) bool { return len(running(as)) == 100 })
	t.Logf("100 allocations running %s after the leader was killed", time.Since(killedAt).Round(time.Millisecond))
	require.Len(t, as, 100, "no duplicate allocation: %s", describe(as))
	for _, a := range as {
		require.Equal(t, "running", a.State)
	}
	require.Eventually(t, func() bool { return countProcs(t, "/bin/sleep "+marker) == 100 }, 30*time.Second, 100*time.Millisecond,
		"exactly one process per allocation (found %d)", countProcs(t, "/bin/sleep "+marker))

	// Stopping the job stops every process.
	c.start(lead)
	c.waitLeader(30 * time.Second)
	require.Eventually(t, func() bool {
		for _, n := range c.nodes {
			if httpJSON(t, "DELETE", n.endpoint()+"/v1/jobs/many", "", nil) == 200 {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond)
	c.waitAllocs("many", "all stopped", 60*time.Second, func(as []itAlloc) bool {
		for _, a := range as {
			if a.State != "stopped" {
				return false
			}
		}
		return true
	})
	require.Eventually(t, func() bool { return countProcs(t, "/bin/sleep "+marker) == 0 }, 30*time.Second, 100*time.Millisecond)
}

// A service's tasks are spread one per worker; a batch job's exit code is
// shown; a crashing task is restarted on its worker with backoff until its
// attempts are spent, then placed elsewhere.
func TestJobs_SpreadBatchExitCodeAndRestartPolicy(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	var ws []*workerProc
	for _, n := range []string{"a", "b", "c"} {
		w := c.newWorker(n)
		w.start()
		ws = append(ws, w)
	}
	for _, w := range ws {
		c.waitWorker(w.id(), "alive", 30*time.Second)
	}
	c.submitJob(`{"name":"svc","count":3,"placement":"spread","task":{"command":"/bin/sleep","args":["1000"],"kill_timeout":"1s"}}`)
	as := c.waitAllocs("svc", "3 running", 60*time.Second, func(as []itAlloc) bool { return len(running(as)) == 3 })
	on := map[string]bool{}
	for _, a := range as {
		on[a.Worker] = true
	}
	require.Len(t, on, 3, "spread: %s", describe(as))

	c.submitJob(`{"name":"exit3","type":"batch","reschedule":false,"task":{"command":"/bin/sh","args":["-c","exit 3"]}}`)
	as = c.waitAllocs("exit3", "failed", 60*time.Second, func(as []itAlloc) bool { return len(as) == 1 && as[0].State == "failed" })
	require.NotNil(t, as[0].ExitCode)
	require.Equal(t, 3, *as[0].ExitCode)

	c.submitJob(`{"name":"crash","type":"batch","restart":{"attempts":2,"delay":"200ms","backoff":2},"task":{"command":"/bin/sh","args":["-c","exit 1"]}}`)
	as = c.waitAllocs("crash", "restarts spent and rescheduled", 60*time.Second, func(as []itAlloc) bool {
		return len(as) >= 2 && as[0].State == "failed" && as[0].Restarts == 2
	})
	require.Contains(t, as[0].Message, "2 restarts")
}
