package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

func TestQuorum_ThousandPutsReadEverywhere(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	c.waitLeader(30 * time.Second)
	cl := c.client()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < 1000; i += 8 {
				if _, err := cl.Put(ctx, fmt.Sprintf("thousand/%04d", i), []byte(fmt.Sprint(i))); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// A value over the limit: the controller answers 413 before it has
	// read the body and closes; the client reports that answer, not the
	// write the close cut short, and its next calls still work.
	_, err := cl.Put(ctx, "thousand/huge", make([]byte, 8<<20))
	require.ErrorIs(t, err, client.ErrTooLarge)
	for id := uint64(1); id <= 3; id++ {
		kvs, _, err := c.client(id).List(ctx, "thousand/")
		require.NoError(t, err, "node %d", id)
		require.Len(t, kvs, 1000, "node %d", id)
		kv, err := c.client(id).Get(ctx, "thousand/0999")
		require.NoError(t, err)
		require.Equal(t, "999", string(kv.Value))
	}
}

// writer keeps writing unique keys and records which writes were
// acknowledged.
type writer struct {
	mu      sync.Mutex
	acked   map[string]string
	seq     atomic.Int64
	lastOK  atomic.Int64 // unix nanos of the last acknowledged write
	maxGap  atomic.Int64
	stopped atomic.Bool
	pause   time.Duration // between writes, to bound the load some tests put on 2 cores
}

func (w *writer) run(ctx context.Context, cl *client.Client, prefix string, wg *sync.WaitGroup) {
	defer wg.Done()
	w.lastOK.Store(time.Now().UnixNano())
	for !w.stopped.Load() && ctx.Err() == nil {
		i := w.seq.Add(1)
		key := fmt.Sprintf("%s/%06d", prefix, i)
		val := strings.Repeat(fmt.Sprintf("%06d", i), 8)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := cl.Put(cctx, key, []byte(val))
		cancel()
		if err != nil {
			continue
		}
		now := time.Now().UnixNano()
		if gap := now - w.lastOK.Swap(now); gap > w.maxGap.Load() {
			w.maxGap.Store(gap)
		}
		w.mu.Lock()
		w.acked[key] = val
		w.mu.Unlock()
		if w.pause > 0 {
			time.Sleep(w.pause) // pacing the load, not waiting for a condition
		}
	}
}

func (w *writer) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func TestQuorum_KillLeaderWritesResumeAndItCatchesUp(t *testing.T) {
	// Small snapshot interval so the restarted node must catch up from a
	// snapshot after the leader compacted its log.
	c := newCluster(t, 3, "--snapshot-every=100")
	c.startAll()
	lead := c.waitLeader(30 * time.Second)
	var others []uint64
	for id := uint64(1); id <= 3; id++ {
		if id != lead {
			others = append(others, id)
		}
	}
	w := &writer{acked: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go w.run(ctx, c.client(others...), "failover", &wg)
	require.Eventually(t, func() bool { return w.ackedCount() > 50 }, 20*time.Second, 10*time.Millisecond)

	killedAt := time.Now()
	c.kill(lead)
	before := w.ackedCount()
	require.Eventually(t, func() bool { return w.ackedCount() > before+400 }, 30*time.Second, 10*time.Millisecond,
		"writes did not resume after the leader was killed")
	newLead := c.waitLeader(20*time.Second, others...)
	w.stopped.Store(true)
	wg.Wait()
	t.Logf("leader %d killed; new leader %d; longest gap between acknowledged writes %v (kill at %s)",
		lead, newLead, time.Duration(w.maxGap.Load()), killedAt.Format(time.RFC3339Nano))

	c.start(lead)
	c.waitLeader(30 * time.Second)
	restarted := c.client(lead)
	require.Eventually(t, func() bool {
		kvs, _, err := restarted.List(ctx, "failover/", client.Serializable())
		return err == nil && len(kvs) >= len(w.acked)
	}, 30*time.Second, 50*time.Millisecond, "restarted node did not catch up")
	kvs, _, err := restarted.List(ctx, "failover/")
	require.NoError(t, err)
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.Key] = string(kv.Value)
	}
	for k, v := range w.acked {
		require.Equal(t, v, got[k], "acknowledged write %s", k)
	}
}

func TestQuorum_KillAllThenRestartKeepsAcknowledgedWrites(t *testing.T) {
	c := newCluster(t, 3, "--snapshot-every=300")
	c.startAll()
	c.waitLeader(30 * time.Second)
	w := &writer{acked: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go w.run(ctx, c.client(), fmt.Sprintf("crash%d", i), &wg)
	}
	require.Eventually(t, func() bool { return w.ackedCount() > 500 }, 60*time.Second, 10*time.Millisecond)
	for id := uint64(1); id <= 3; id++ {
		c.kill(id) // while writes are in flight
	}
	w.stopped.Store(true)
	cancel()
	wg.Wait()
	c.startAll()
	c.waitLeader(30 * time.Second)
	kvs, _, err := c.client().List(context.Background(), "crash")
	require.NoError(t, err)
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.Key] = string(kv.Value)
	}
	for k, v := range w.acked {
		require.Equal(t, v, got[k], "acknowledged write %s lost or changed", k)
	}
	for k, v := range got {
		// Unacknowledged writes may or may not be there, but never torn.
		var i int
		_, err := fmt.Sscanf(k[strings.Index(k, "/")+1:], "%06d", &i)
		require.NoError(t, err)
		require.Equal(t, strings.Repeat(fmt.Sprintf("%06d", i), 8), v, "half-applied value for %s", k)
	}
	t.Logf("%d acknowledged writes, %d keys after restart", len(w.acked), len(got))
}

func TestQuorum_ForeignCertificateCannotJoin(t *testing.T) {
	c := newCluster(t, 3)
	// Node 3 gets a certificate for itself from its own CA: the others must
	// refuse it and it them. That CA even names this cluster: what the
	// cluster trusts is its CA's key, not a name.
	foreignCA := filepath.Join(t.TempDir(), "foreign-ca")
	newCA(t, foreignCA, c.name)
	c.nodes[3].tlsDir = issueCert(t, foreignCA, roleController, "3", filepath.Join(t.TempDir(), "tls-3"))
	c.startAll()
	lead := c.waitLeader(30*time.Second, 1, 2)
	_, err := c.client(1, 2).Put(context.Background(), "trusted", []byte("yes"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return rejected(t, c.nodes[lead], "untrusted_cert") > 0
	}, 20*time.Second, 50*time.Millisecond, "rejected peer not counted")
	ci, err := c.nodes[3].info()
	require.NoError(t, err)
	require.Zero(t, ci.LeaderID, "node with a foreign certificate found a leader")
	// It has not the data. Since it never reached the cluster, it cannot
	// know the cluster's access control state either, so it answers
	// not_ready (which the client retries until its timeout) rather than
	// judge the request on its own empty state.
	_, err = c.client(3).Get(context.Background(), "trusted", client.Serializable())
	require.Error(t, err, "the foreign node has the data")
}

func TestQuorum_DataDirOfAnotherClusterRefused(t *testing.T) {
	c := newCluster(t, 1)
	c.startAll()
	c.waitLeader(30 * time.Second)
	var cid string
	require.Eventually(t, func() bool {
		ci, err := c.nodes[1].info()
		if err == nil {
			cid = ci.ClusterID
		}
		return cid != ""
	}, 20*time.Second, 20*time.Millisecond)
	c.kill(1)
	out, code := runCLI(t, append(c.args(c.nodes[1]), "--cluster-id=not-"+cid)...)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "belongs to cluster "+cid)
}
