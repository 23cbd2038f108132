package replica

import (
	"context"
	"time"

	"go.etcd.io/raft/v3"
)

// A cluster restarted as a whole has no leader until one member's
// randomized election timeout runs out. advanceElection (replica.go) cuts
// that to 2-9 ticks after a member starts, 0.2-0.9 s by default, and the
// randomness is what keeps two members from campaigning together and
// splitting the vote. At a restart of a million keys the wait was a
// fifth of the time to the first write (docs/PERFORMANCE.md, "A leader at
// once after a whole-cluster restart").
//
// So at start the voter with the lowest id campaigns at once, and again
// every tick while no leader is known, for one election timeout; the
// others keep raft's timers. One member campaigning first cannot split
// the vote, and it wins as soon as a majority is up to answer, if its log
// is as long as theirs (else they refuse it, and raft's timers elect one
// of them as before). A member restarted alone into a running cluster
// costs nothing: with PreVote and CheckQuorum the others ignore its
// pre-votes while they hear from their leader, its term does not move,
// and the leader's next heartbeat makes it a follower. After that window
// raft's own timers are left to it, as after a leader's death
// (leaderdeath.go).

// campaigner is raft's node with the CampaignUnlessCandidate our copy adds
// (here and in leaderdeath.go).
type campaigner interface {
	CampaignUnlessCandidate(ctx context.Context) error
}

// electAtBoot runs once, when the replica starts.
func (c *Replica) electAtBoot() {
	window := time.Duration(c.cfg.ElectionTicks) * c.cfg.TickInterval
	ctx, cancel := context.WithTimeout(c.ctx, window)
	defer cancel()
	t := time.NewTicker(c.cfg.TickInterval)
	defer t.Stop()
	for {
		// The configuration may be known only once the log after the
		// snapshot is applied (a young cluster has none): until then, wait.
		if voters, _ := c.members(); len(voters) > 0 {
			if len(voters) < 2 || c.campaignRank(0) != 0 {
				return // a lone voter elects itself; a learner or a higher id waits for raft
			}
			// Never from StateCandidate: a second campaign there throws
			// away the votes on their way and costs another term. Raft
			// decides that when it steps the campaign
			// (CampaignUnlessCandidate): a check of its state before
			// could not, since it may become a candidate in between (a
			// whole-cluster restart then took two terms, once in CI).
			// The state read here only saves a pointless campaign; it is
			// asked of raft, the one the raft loop publishes can lag.
			switch st := c.node.Status(); {
			case st.Lead != 0:
				return
			case st.RaftState == raft.StateFollower, st.RaftState == raft.StatePreCandidate:
				// Counted first: the election may be over before
				// the campaign returns, and a test reads this once it is.
				c.met.bootCampaigns.Inc()
				_ = c.campaign.CampaignUnlessCandidate(ctx) // fails only when stopping
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done(): // also when the replica stops (c.ctx)
			return
		}
	}
}
