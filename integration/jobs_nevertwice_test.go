package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// flockTask holds an exclusive flock on a shared file for its whole life.
// If it cannot take the lock at once, another instance still holds it: it
// records a violation, then waits for the lock like a well-behaved
// singleton would not have to.
func flockTask(dir string) string {
	lock, viol, events := filepath.Join(dir, "lock"), filepath.Join(dir, "violations"), filepath.Join(dir, "events")
	script := fmt.Sprintf(`exec 9>>%s
if ! flock -n 9; then echo "violation $(date +%%s.%%N) $CORRAL_ALLOC_ID" >> %s; flock 9; fi
echo "start $(date +%%s.%%N) $CORRAL_ALLOC_ID" >> %s
exec sleep 100000`, lock, viol, events)
	b, _ := jsonString(script)
	return `{"name":"single","singleton":true,"task":{"command":"/bin/sh","args":["-c",` + b + `],"kill_timeout":"1s"}}`
}

func jsonString(s string) (string, error) {
	return strconv.Quote(s), nil // a Go quoted string is valid JSON for these characters
}

// starts returns the task start times recorded in the events file.
func starts(t *testing.T, dir string) []time.Time {
	b, err := os.ReadFile(filepath.Join(dir, "events"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		sec, err := strconv.ParseFloat(f[1], 64)
		require.NoError(t, err)
		out = append(out, time.Unix(0, int64(sec*1e9)))
	}
	return out
}

// A singleton job whose task holds an exclusive flock for its whole life is
// moved off its worker by four faults, one at a time: (a) the worker is cut
// off from the controllers by a real network partition (a network
// namespace), (b) the worker is killed with kill -9, (c) the worker is
// frozen with SIGSTOP while its task keeps running, (d) the leader is
// killed in the middle of (a). Each time the job must run elsewhere and
// the task must never find the lock taken; the API must never show two
// live allocations.
func TestJobs_SingletonNeverRunsTwice(t *testing.T) {
	lab := newNetnsLab(t)
	c := newCluster(t, 3, workerControllerFlags()...)
	for _, n := range c.nodes {
		n.clusterAddr = lab.hostAddr()
	}
	c.startAll()
	c.waitLeader(30 * time.Second)
	dir := t.TempDir()

	// Tasks run as root here: they lock a file in the test's own
	// (root-only) temp dir. Isolation has its own test.
	wn := c.newWorker("netns", "--task-user=root")
	wn.httpAddr = lab.nsIP + ":19101"
	for i, a := range wn.args {
		if strings.HasPrefix(a, "--http-addr=") {
			wn.args[i] = "--http-addr=" + wn.httpAddr
		}
	}
	wn.wrap = []string{"ip", "netns", "exec", lab.ns}
	wn.start()
	c.waitWorker(wn.id(), "alive", 30*time.Second)

	c.submitJob(flockTask(dir))
	c.waitAllocs("single", "running on the netns worker", 30*time.Second, func(as []itAlloc) bool {
		r := running(as)
		return len(r) == 1 && r[0].Worker == wn.id()
	})
	w2, w3 := c.newWorker("b", "--task-user=root"), c.newWorker("c", "--task-user=root")
	w2.start()
	w3.start()
	c.waitWorker(w2.id(), "alive", 30*time.Second)
	c.waitWorker(w3.id(), "alive", 30*time.Second)
	byID := map[string]*workerProc{wn.id(): wn, w2.id(): w2, w3.id(): w3}

	// Watch the API throughout: never two live allocations at once.
	stop := make(chan struct{})
	var mu sync.Mutex
	var twice []string
	var wg sync.WaitGroup
	var eps []string
	for _, n := range c.nodes {
		eps = append(eps, n.endpoint())
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			as, ok := allocsFrom(t, eps, "single")
			if !ok {
				continue
			}
			live := 0
			for _, a := range as {
				if a.State == "pending" || a.State == "starting" || a.State == "running" {
					live++
				}
			}
			if live > 1 {
				mu.Lock()
				twice = append(twice, describe(as))
				mu.Unlock()
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	holder := func() string {
		r := running(c.waitAllocs("single", "one running", 30*time.Second, func(as []itAlloc) bool { return len(running(as)) == 1 }))
		return r[0].Worker
	}
	moved := func(name, from string, at time.Time, bound time.Duration) {
		t.Helper()
		before := len(starts(t, dir))
		c.waitAllocs("single", name+": running elsewhere", itSessionTimeout+30*time.Second, func(as []itAlloc) bool {
			r := running(as)
			return len(r) == 1 && r[0].Worker != from
		})
		require.Eventually(t, func() bool { return len(starts(t, dir)) > before }, 10*time.Second, 20*time.Millisecond)
		s := starts(t, dir)
		t.Logf("(%s) the job ran again %s after the fault (session timeout %s)", name, s[len(s)-1].Sub(at).Round(time.Millisecond), itSessionTimeout)
		require.Less(t, s[len(s)-1].Sub(at), bound, "%s: rescheduling took longer than %s", name, bound)
	}

	// (a) network partition of the worker running the job.
	require.Equal(t, wn.id(), holder())
	at := time.Now()
	lab.inNS("ip", "link", "set", lab.nsIF, "down")
	moved("a: partition", wn.id(), at, itSessionTimeout+2*time.Second)
	lab.inNS("ip", "link", "set", lab.nsIF, "up")
	c.waitWorkerEpoch(wn.id(), "alive", 2, 30*time.Second)

	// (b) kill -9 of the worker running the job.
	h := holder()
	at = time.Now()
	byID[h].kill()
	moved("b: kill -9", h, at, itSessionTimeout+2*time.Second)
	byID[h].start()
	c.waitWorker(h, "alive", 30*time.Second)

	// (c) SIGSTOP of the worker running the job; its task keeps running
	// until its supervisor notices the silence.
	h = holder()
	at = time.Now()
	require.NoError(t, byID[h].cmd.Process.Signal(syscall.SIGSTOP))
	moved("c: SIGSTOP", h, at, itSessionTimeout+2*time.Second)
	require.NoError(t, byID[h].cmd.Process.Signal(syscall.SIGCONT))
	c.waitWorker(h, "alive", 30*time.Second)

	// (d) back on the netns worker (drain the others), then partition it
	// and kill the leader in the middle.
	wantStarts := 5 // submission and one per fault
	if holder() != wn.id() {
		wantStarts++ // the move back
	}
	for _, w := range []*workerProc{w2, w3} {
		require.Equal(t, 200, httpJSON(t, "POST", c.nodes[c.waitLeader(30*time.Second)].endpoint()+"/v1/workers/"+w.id()+"/drain", `{"drain":true}`, nil))
	}
	c.waitAllocs("single", "back on the netns worker", 60*time.Second, func(as []itAlloc) bool {
		r := running(as)
		return len(r) == 1 && r[0].Worker == wn.id()
	})
	lead := c.waitLeader(30 * time.Second)
	for _, w := range []*workerProc{w2, w3} {
		require.Equal(t, 200, httpJSON(t, "POST", c.nodes[lead].endpoint()+"/v1/workers/"+w.id()+"/drain", `{"drain":false}`, nil))
	}
	at = time.Now()
	lab.inNS("ip", "link", "set", lab.nsIF, "down")
	time.Sleep(itSessionTimeout / 3) // the fault's timing: the leader dies mid-partition
	c.kill(lead)
	// A new leader gives every worker a full session timeout from its
	// takeover (it cannot know what its predecessor heard), so the gap is
	// the fault's delay + the election + a session timeout.
	moved("d: partition + leader killed", wn.id(), at, itSessionTimeout/3+itSessionTimeout+4*time.Second)
	lab.inNS("ip", "link", "set", lab.nsIF, "up")
	c.start(lead)

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, twice, "the API showed two live allocations of the singleton")
	v, err := os.ReadFile(filepath.Join(dir, "violations"))
	require.True(t, os.IsNotExist(err), "a task found the lock held by another instance: %s", v)
	require.Len(t, starts(t, dir), wantStarts, "one start at submission, one after each fault and one for a move back")
}
