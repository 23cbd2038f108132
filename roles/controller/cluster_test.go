package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/transport"
)

// memCluster runs whole controllers in one process over the in-memory
// network, so partitions, drops and delays are under the test's control.
type memCluster struct {
	t     *testing.T
	net   *transport.MemNetwork
	nodes map[uint64]*Controller
	cfgs  map[uint64]Config

	mu      sync.Mutex
	leaders map[uint64]map[uint64]bool // term -> ids seen leading it
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newMemCluster(t *testing.T, n int, tweak func(*Config)) *memCluster {
	t.Helper()
	mc := &memCluster{t: t, net: transport.NewMemNetwork(1), nodes: map[uint64]*Controller{},
		cfgs: map[uint64]Config{}, leaders: map[uint64]map[uint64]bool{}, stop: make(chan struct{})}
	peers := map[uint64]string{}
	for i := 1; i <= n; i++ {
		peers[uint64(i)] = fmt.Sprintf("mem:%d", i)
	}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		cfg := Config{
			NodeID: id, DataDir: t.TempDir(), Peers: peers, NoSync: true,
			TickInterval: 20 * time.Millisecond, RequestTimeout: 3 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		if tweak != nil {
			tweak(&cfg)
		}
		mc.cfgs[id] = cfg
		mc.start(id)
	}
	mc.wg.Add(1)
	go mc.watchLeaders()
	t.Cleanup(mc.close)
	return mc
}

func (mc *memCluster) start(id uint64) {
	cfg := mc.cfgs[id]
	cfg.Transport = mc.net.Transport(id)
	c, err := Start(cfg)
	require.NoError(mc.t, err)
	mc.mu.Lock()
	mc.nodes[id] = c
	mc.mu.Unlock()
}

func (mc *memCluster) node(id uint64) *Controller {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.nodes[id]
}

func (mc *memCluster) stopNode(id uint64) {
	mc.mu.Lock()
	c := mc.nodes[id]
	delete(mc.nodes, id)
	mc.mu.Unlock()
	require.NoError(mc.t, c.Close())
}

// watchLeaders samples every node's view to check that no term ever has two
// leaders (Election Safety).
func (mc *memCluster) watchLeaders() {
	defer mc.wg.Done()
	for {
		select {
		case <-mc.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		mc.mu.Lock()
		for id, c := range mc.nodes {
			// One Status call gives a consistent (role, term) pair; mixing
			// our published flag with a fresh term would misattribute.
			if st := c.r.Status(); st.RaftState == raft.StateLeader {
				term := st.GetTerm()
				if mc.leaders[term] == nil {
					mc.leaders[term] = map[uint64]bool{}
				}
				mc.leaders[term][id] = true
			}
		}
		mc.mu.Unlock()
	}
}

func (mc *memCluster) close() {
	close(mc.stop)
	mc.wg.Wait()
	for term, ids := range mc.leaders {
		if len(ids) > 1 {
			mc.t.Errorf("term %d had %d leaders: %v", term, len(ids), ids)
		}
	}
	mc.mu.Lock()
	nodes := mc.nodes
	mc.nodes = map[uint64]*Controller{}
	mc.mu.Unlock()
	for _, c := range nodes {
		c.Close()
	}
}

// waitLeader waits until every node in ids agrees on one leader among ids.
func (mc *memCluster) waitLeader(ids ...uint64) uint64 {
	mc.t.Helper()
	var lead uint64
	require.Eventually(mc.t, func() bool {
		lead = 0
		for _, id := range ids {
			l := mc.node(id).LeaderID()
			if l == 0 || (lead != 0 && l != lead) {
				return false
			}
			lead = l
		}
		for _, id := range ids {
			if id == lead {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "no agreed leader among %v", ids)
	return lead
}

func (mc *memCluster) put(id uint64, key, val string) (metadata.Result, error) {
	return mc.node(id).Propose(context.Background(), &metadata.Command{Op: metadata.OpPut, Key: key, Value: []byte(val)})
}

func (mc *memCluster) ids() []uint64 {
	ids := make([]uint64, 0, len(mc.cfgs))
	for id := 1; id <= len(mc.cfgs); id++ {
		ids = append(ids, uint64(id))
	}
	return ids
}

func (mc *memCluster) others(lead uint64) []uint64 {
	var out []uint64
	for _, id := range mc.ids() {
		if id != lead {
			out = append(out, id)
		}
	}
	return out
}
