package integration

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// composeJob keeps one allocation on each worker. The workers run tasks
// on their own filesystem, and in the scratch image the only program is
// /corral: `corral dev` is a long-running one that needs nothing outside
// its task directory (its data dir is relative to it) and listens on
// loopback ports the kernel picks, so two can share a worker. Its
// ZooKeeper port (127.0.0.1:2181 by default) is off: the second of two
// on one worker failed to bind it and exited, which is what happens when
// a stopped worker's allocation moves next to the other.
const composeJob = `{
  "name": "idle", "type": "service", "count": 2,
  "task": {
    "command": "/corral",
    "args": ["dev", "--data-dir=dev", "--http-addr=127.0.0.1:0", "--cluster-addr=127.0.0.1:0", "--zk-addr=", "--log-level=warn"],
    "resources": {"cpu_millis": 10, "memory_mb": 32}
  }
}`

// TestCompose runs deploy/compose/docker-compose.yml from the image `make
// image` builds: keys and a job work, a leader cut off from the network is
// replaced and steps down, catches up once back, and a stopped worker's
// allocations move to the other worker. It needs a Docker engine (skipped
// where none runs) and docker-compose.
func TestCompose(t *testing.T) {
	requireDocker(t)
	start := time.Now()
	buildComposeImage(t)
	t.Logf("image built in %s", time.Since(start).Round(time.Second))
	c := startCompose(t)
	t.Logf("cluster up in %s", time.Since(start).Round(time.Second))
	ctx := context.Background()
	all := c.client(1, 2, 3)

	var leader uint64
	poll(t, 60*time.Second, "a leader all controllers agree on", func() (err error) {
		leader, err = c.leaderOf(ctx, 1, 2, 3)
		return err
	})
	poll(t, 60*time.Second, "both workers alive", func() error {
		st, err := all.Cluster(ctx)
		if err != nil {
			return err
		}
		if st.Workers["alive"] != 2 {
			return fmt.Errorf("workers: %v", st.Workers)
		}
		return nil
	})

	_, err := all.Put(ctx, "compose/before", []byte("1"))
	require.NoError(t, err)
	kv, err := all.Get(ctx, "compose/before")
	require.NoError(t, err)
	require.Equal(t, "1", string(kv.Value))

	_, _, err = all.SubmitJob(ctx, []byte(composeJob))
	require.NoError(t, err)
	var workers []string
	poll(t, 60*time.Second, "the job's 2 allocations running", func() error {
		allocs, err := all.Allocations(ctx, "idle", "")
		if err != nil {
			return err
		}
		workers = workers[:0]
		for _, a := range allocs {
			if a.State == "running" {
				workers = append(workers, a.Worker)
			}
		}
		if len(workers) != 2 {
			return fmt.Errorf("allocations: %+v", allocs)
		}
		return nil
	})
	t.Logf("job running on %v after %s", workers, time.Since(start).Round(time.Second))

	// Cut the leader off. Its published API port goes through the network
	// it leaves, so the test reaches it with `docker exec` from here on.
	old := fmt.Sprintf("controller-%d", leader)
	oldContainer := c.container(old)
	_, err = c.docker(30*time.Second, "network", "disconnect", c.network(), oldContainer)
	require.NoError(t, err)
	var rest []int
	for id := 1; id <= 3; id++ {
		if uint64(id) != leader {
			rest = append(rest, id)
		}
	}
	majority := c.client(rest...)
	poll(t, 60*time.Second, "a new leader among the other two", func() error {
		l, err := c.leaderOf(ctx, rest...)
		if err == nil && l == leader {
			return fmt.Errorf("controllers %v still follow the cut-off controller %d", rest, leader)
		}
		return err
	})
	poll(t, 30*time.Second, "a write to the majority", func() error {
		_, err := majority.Put(ctx, "compose/during", []byte("2"))
		return err
	})
	noLeader := regexp.MustCompile(`(?m)^leader:\s+none`)
	poll(t, 60*time.Second, "the cut-off controller stepping down", func() error {
		out, err := c.execCorral(old, "status", "--timeout=3s")
		if err != nil {
			return err
		}
		if !noLeader.MatchString(out) {
			return fmt.Errorf("%s still sees a leader:\n%s", old, out)
		}
		return nil
	})
	// Linearizable reads need the quorum: refused (or timed out) while cut off.
	out, err := c.execCorral(old, "kv", "get", "--timeout=3s", "compose/before")
	require.Error(t, err, "the cut-off controller answered a linearizable read: %s", out)
	t.Logf("partition handled after %s", time.Since(start).Round(time.Second))

	// Back on the network under its service name, it catches up: its own
	// state (a serializable read) has the key written while it was away.
	_, err = c.docker(30*time.Second, "network", "connect", "--alias", old, c.network(), oldContainer)
	require.NoError(t, err)
	poll(t, 60*time.Second, "the reconnected controller catching up", func() error {
		out, err := c.execCorral(old, "kv", "get", "--serializable", "--timeout=3s", "compose/during")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "2" {
			return fmt.Errorf("compose/during reads %q", out)
		}
		return nil
	})
	poll(t, 30*time.Second, "a linearizable read on the reconnected controller", func() error {
		_, err := c.execCorral(old, "kv", "get", "--timeout=3s", "compose/during")
		return err
	})

	// Stop a worker: its allocation moves to the other one.
	gone := workers[0]
	_, err = c.compose(60*time.Second, "stop", "-t", "5", gone)
	require.NoError(t, err)
	poll(t, 90*time.Second, "both allocations running on the remaining worker", func() error {
		allocs, err := majority.Allocations(ctx, "idle", "")
		if err != nil {
			return err
		}
		var on []string
		for _, a := range allocs {
			if a.State == "running" {
				on = append(on, a.Worker)
			}
		}
		if len(on) != 2 || slices.Contains(on, gone) {
			return fmt.Errorf("running on %v (want 2, none on %s)", on, gone)
		}
		return nil
	})
	t.Logf("done in %s", time.Since(start).Round(time.Second))
}
