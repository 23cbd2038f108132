package replica

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
)

// joinCluster prepares an empty data dir to join a running cluster: it asks
// the --join endpoints who the members are, checks that this controller was
// added (as a learner) and records the cluster id. Raft then starts with an
// empty configuration and learns it from the leader's log or snapshot.
func (c *Replica) joinCluster() error {
	cl, err := client.New(client.Config{Endpoints: c.cfg.Join, Token: c.cfg.Token, Timeout: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("--join: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The endpoint asked may be a follower that has not applied the
	// `controller add` yet: ask again for a while before giving up.
	var cs *client.ClusterStatus
	for {
		cs, err = cl.Cluster(ctx)
		if err != nil {
			return fmt.Errorf("ask %v about the cluster to join: %w", c.cfg.Join, err)
		}
		if listed(cs, c.cfg.NodeID) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	added := listed(cs, c.cfg.NodeID)
	for _, m := range cs.Controllers {
		if m.ID != c.cfg.NodeID && m.Address != "" {
			c.cfg.Peers[m.ID] = m.Address
			c.tr.AddPeer(m.ID, m.Address)
		}
	}
	if !added {
		return fmt.Errorf("controller %d is not a member of cluster %s yet: run `corral controller add %d %s` against it first, then start this controller again",
			c.cfg.NodeID, cs.ClusterID, c.cfg.NodeID, c.cfg.ClusterAddr)
	}
	if cs.ClusterID == "" {
		return fmt.Errorf("cluster at %v has no cluster id yet; retry in a moment", c.cfg.Join)
	}
	if c.cfg.ClusterID != "" && c.cfg.ClusterID != cs.ClusterID {
		return fmt.Errorf("--cluster-id %s does not match the cluster at %v (%s)", c.cfg.ClusterID, c.cfg.Join, cs.ClusterID)
	}
	if err := c.store.SetMeta("cluster_id", cs.ClusterID); err != nil {
		return fmt.Errorf("record cluster id: %w", err)
	}
	c.clusterID.Store(cs.ClusterID)
	c.joining = true
	c.log.Info("joining cluster", "cluster_id", cs.ClusterID, "leader", cs.LeaderID, "members", len(cs.Controllers))
	return nil
}

func listed(cs *client.ClusterStatus, id uint64) bool {
	for _, m := range cs.Controllers {
		if m.ID == id {
			return true
		}
	}
	return false
}

// AnnounceHTTP records this controller's API address (addr) in the
// replicated member list, so followers can forward leader-only requests to
// it and clients and the dashboard can find every API endpoint. It retries
// until the entry commits or the replica stops.
func (c *Replica) AnnounceHTTP(addr string) {
	for first := true; ; first = false {
		if !first {
			select {
			case <-c.stopc:
				return
			case <-time.After(c.cfg.TickInterval):
			}
		}
		if c.leader.Load() == 0 {
			continue
		}
		m, ok := c.State().Member(c.cfg.NodeID)
		if !ok {
			continue // not applied our own membership yet
		}
		if m.HTTPAddress == addr {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
		_, err := c.Propose(ctx, &metadata.Command{Op: metadata.OpSetMemberHTTP,
			Key: strconv.FormatUint(c.cfg.NodeID, 10), Value: []byte(addr)})
		cancel()
		if err == nil {
			c.log.Info("announced HTTP address", "http_addr", addr)
			return
		}
	}
}
