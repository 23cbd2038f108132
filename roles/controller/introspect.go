package controller

import (
	"time"

	"go.etcd.io/raft/v3"
)

// These accessors expose what tests and operators need to observe of a
// controller without reaching into its parts.

// NodeID returns this controller's raft node id.
func (c *Controller) NodeID() uint64 { return c.cfg.NodeID }

// RaftRole returns whether raft considers this node the leader and the
// term, from one consistent sample of raft's status (a published flag read
// next to a fresh term could pair values from two different moments).
func (c *Controller) RaftRole() (leader bool, term uint64) {
	st := c.r.Status()
	return st.RaftState == raft.StateLeader, st.GetTerm()
}

// SessionsSince returns when this controller, as leader, loaded its worker
// session table: every worker's session timeout counts from then at the
// earliest. It is the zero time while not leading.
func (c *Controller) SessionsSince() time.Time { return c.workers.Since() }

// SessionCheckEvery is how often the leader looks for expired sessions.
func (c *Controller) SessionCheckEvery() time.Duration { return c.workers.CheckEvery() }
