// Package testcluster runs whole controllers and workers in one process
// over the in-memory transport: the same code as production, with
// partitions, drops and delays under the test's control. It is the harness
// for tests that need both trees (roles/controller and roles/worker), which
// only roles/ itself may see together.
//
// Times are scaled down: heartbeats every Heartbeat, a SessionTimeout
// session timeout (a worker fences itself after 0.6 of it).
package testcluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller"
	"github.com/corral-dev/corral/transport"
)

const (
	// Heartbeat is the workers' heartbeat interval.
	Heartbeat = 50 * time.Millisecond
	// SessionTimeout is the controllers' worker session timeout.
	SessionTimeout = time.Second
	// workerNetBase is the first MemNetwork id used by workers.
	workerNetBase = 100
)

// Cluster is a set of controllers on one in-memory network whose worker
// listeners accept workers. It checks Election Safety (never two leaders
// in a term) for its whole life.
type Cluster struct {
	t *testing.T
	// Net is the in-memory network: tests isolate, partition and heal
	// nodes with it.
	Net *transport.MemNetwork

	mu      sync.Mutex
	nodes   map[uint64]*controller.Controller
	cfgs    map[uint64]controller.Config
	nextNet uint64
	leaders map[uint64]map[uint64]bool // term -> ids seen leading it
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New starts n controllers; tweak, when set, adjusts each one's config.
func New(t *testing.T, n int, tweak func(*controller.Config)) *Cluster {
	t.Helper()
	return NewSeeded(t, n, 7, tweak)
}

// NewSeeded is New on a network whose losses and delays derive from seed.
func NewSeeded(t *testing.T, n int, seed int64, tweak func(*controller.Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Net: transport.NewMemNetwork(seed), nodes: map[uint64]*controller.Controller{},
		cfgs: map[uint64]controller.Config{}, leaders: map[uint64]map[uint64]bool{}, stop: make(chan struct{}),
		nextNet: workerNetBase}
	// Like a worker's QUIC idle timeout relative to the default session
	// timeout (transport.MaxIdleTimeout, 3 of them): a worker must not
	// need a cut connection to die before it moves to the new leader.
	c.Net.SetStreamIdleTimeout(3 * SessionTimeout)
	peers := map[uint64]string{}
	for i := 1; i <= n; i++ {
		peers[uint64(i)] = fmt.Sprintf("mem:%d", i)
	}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		cfg := controller.Config{
			NodeID: id, DataDir: t.TempDir(), Peers: peers, NoSync: true,
			TickInterval: 20 * time.Millisecond, RequestTimeout: 3 * time.Second, SessionTimeout: SessionTimeout,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		if tweak != nil {
			tweak(&cfg)
		}
		c.cfgs[id] = cfg
		c.StartController(id)
	}
	c.wg.Add(1)
	go c.watchLeaders()
	t.Cleanup(c.close)
	return c
}

// StartController (re)starts controller id with a fresh worker listener on
// its cluster address, so redirects to it resolve.
func (c *Cluster) StartController(id uint64) {
	cfg := c.Config(id)
	ln, err := c.Net.ListenStreams(id, cfg.Peers[id])
	require.NoError(c.t, err)
	cfg.WorkerListener = ln
	api, err := c.Net.ListenStreams(id, cfg.Peers[id]+controller.PeerHTTPSuffix)
	require.NoError(c.t, err)
	cfg.PeerHTTPListener, cfg.PeerHTTPDialer = api, c.Net.StreamDialer(id)
	cfg.Transport = c.Net.Transport(id)
	ctrl, err := controller.Start(cfg)
	require.NoError(c.t, err)
	c.mu.Lock()
	c.nodes[id] = ctrl
	c.mu.Unlock()
}

// StopController closes controller id (a clean stop).
func (c *Cluster) StopController(id uint64) {
	c.mu.Lock()
	ctrl := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	require.NoError(c.t, ctrl.Close())
}

// Config returns the config controller id was started with.
func (c *Cluster) Config(id uint64) controller.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfgs[id]
}

// Addr returns controller id's cluster address (where workers dial it).
func (c *Cluster) Addr(id uint64) string { return c.Config(id).Peers[id] }

// Node returns running controller id, or nil.
func (c *Cluster) Node(id uint64) *controller.Controller {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// IDs returns every controller id, running or not, in order.
func (c *Cluster) IDs() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]uint64, 0, len(c.cfgs))
	for id := 1; id <= len(c.cfgs); id++ {
		ids = append(ids, uint64(id))
	}
	return ids
}

// Others returns every controller id but id.
func (c *Cluster) Others(id uint64) []uint64 {
	var out []uint64
	for _, o := range c.IDs() {
		if o != id {
			out = append(out, o)
		}
	}
	return out
}

// ControllerAddrs returns every controller's cluster address.
func (c *Cluster) ControllerAddrs() []string {
	var out []string
	for _, id := range c.IDs() {
		out = append(out, c.Addr(id))
	}
	return out
}

// NewNetID returns an unused in-memory network address for a worker or a
// hand-made peer.
func (c *Cluster) NewNetID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextNet++
	return c.nextNet
}

// WaitLeader waits until every node in ids agrees on one leader among ids.
func (c *Cluster) WaitLeader(ids ...uint64) uint64 {
	c.t.Helper()
	var lead uint64
	require.Eventually(c.t, func() bool {
		lead = 0
		for _, id := range ids {
			n := c.Node(id)
			if n == nil {
				return false
			}
			l := n.LeaderID()
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

// Leader waits for an agreed leader among the running controllers.
func (c *Cluster) Leader() *controller.Controller {
	c.t.Helper()
	var running []uint64
	c.mu.Lock()
	for id := range c.nodes {
		running = append(running, id)
	}
	c.mu.Unlock()
	sort.Slice(running, func(i, j int) bool { return running[i] < running[j] })
	return c.Node(c.WaitLeader(running...))
}

// Put writes key=val through controller id.
func (c *Cluster) Put(id uint64, key, val string) (metadata.Result, error) {
	return c.Node(id).Propose(context.Background(), &metadata.Command{Op: metadata.OpPut, Key: key, Value: []byte(val)})
}

// watchLeaders samples every node's view to check that no term ever has two
// leaders (Election Safety).
func (c *Cluster) watchLeaders() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		c.mu.Lock()
		for id, n := range c.nodes {
			if leader, term := n.RaftRole(); leader {
				if c.leaders[term] == nil {
					c.leaders[term] = map[uint64]bool{}
				}
				c.leaders[term][id] = true
			}
		}
		c.mu.Unlock()
	}
}

func (c *Cluster) close() {
	close(c.stop)
	c.wg.Wait()
	for term, ids := range c.leaders {
		if len(ids) > 1 {
			c.t.Errorf("term %d had %d leaders: %v", term, len(ids), ids)
		}
	}
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = map[uint64]*controller.Controller{}
	c.mu.Unlock()
	for _, n := range nodes {
		n.Close()
	}
}
