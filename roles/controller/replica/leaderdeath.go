package replica

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/corral-dev/corral/transport"
)

var _ transport.PeerGoneHandler = (*Replica)(nil)

// A leader whose process ends elects its successor at once, instead of
// after the followers' election timeout (0.7-1.4 s by default): the
// transport's liveness link (transport/liveness.go) tells each follower
// that the leader's process is gone, and each then forgets its leader
// (raft's ForgetLeader). With PreVote and CheckQuorum a follower refuses
// to vote while it has heard from its leader within the election timeout;
// a follower that forgot its leader votes at once, so the first of them to
// campaign wins as soon as the other forgot too.
//
// Only one should campaign: two candidates at once split the vote and
// both wait out a randomized timeout. The voters left rank themselves by
// id; the first campaigns at once and again every two ticks while no
// leader is known (its pre-vote is ignored by a follower that has not
// heard the news yet), the next waits deathCampaignStagger ticks per rank
// before it joins in (the first may be cut off). A survivor that refuses
// the first one's pre-vote because its own log is further along campaigns
// at once instead (preVoteRefused): under load the first-ranked is often
// the follower that lagged.
// Nothing here changes raft's safety: a vote still needs a majority and an
// up-to-date log, and reads are ReadOnlySafe (ForgetLeader is refused
// with lease-based reads). A false report costs at most a pre-vote that
// the others ignore, and the follower takes its leader back at its next
// heartbeat. After one election timeout without a leader, raft's own
// timers are left to it.

// deathCampaignFirst is how long, in ticks, the first-ranked follower
// waits before its first campaign: the other followers hear of the death
// at about the same moment, from their own connections.
const deathCampaignFirst = 0.2

// deathCampaignEvery is how often, in ticks, a follower campaigns again
// while the news of the leader's death has not reached the others.
const deathCampaignEvery = 1

// deathCampaignStagger is how many ticks each rank waits after the one
// before it.
const deathCampaignStagger = 4

// deathElection is the election after a leader's death under way, if any.
type deathElection struct {
	mu     sync.Mutex
	leader uint64 // the dead leader
	term   uint64 // its term
	gen    uint64 // bumped by each new report; an older election gives up
	// kick asks the election under way to campaign now: this member
	// refused a pre-vote because its log is ahead (preVoteRefused).
	kick chan struct{}
}

// preVoteRefused runs when this member sends the refusal of a pre-vote
// (on the append loop: raft sends vote answers after the write before
// them). While it is electing a dead leader's successor, the refusal
// means the candidate's log is behind this one's (a follower that has
// forgotten its leader refuses for no other reason), so the candidate
// cannot win and this member, further along, should campaign now rather
// than wait for its rank: the first-ranked survivor is often the one that
// lagged, the follower outside the leader's fastest quorum.
func (c *Replica) preVoteRefused() {
	select {
	case c.death.kick <- struct{}{}:
	default:
	}
}

// PeerGone is the transport's word that controller id's process ended
// (transport.PeerGoneHandler). It never blocks.
func (c *Replica) PeerGone(id uint64) {
	if id == 0 || id != c.leader.Load() || c.isLeader.Load() {
		return // only the death of the leader needs an election
	}
	term := c.term.Load()
	d := &c.death
	d.mu.Lock()
	if d.leader == id && d.term == term {
		d.mu.Unlock()
		return // already on it
	}
	d.leader, d.term = id, term
	d.gen++
	gen := d.gen
	d.mu.Unlock()
	go c.electAfterLeaderDeath(id, gen)
}

// current reports whether gen is the latest election.
func (d *deathElection) current(gen uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.gen == gen
}

// electAfterLeaderDeath forgets the dead leader and campaigns in this
// member's turn, until a new leader is known or an election timeout passed.
func (c *Replica) electAfterLeaderDeath(dead, gen uint64) {
	timeout := time.Duration(c.cfg.ElectionTicks) * c.cfg.TickInterval
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	c.met.leaderDeaths.Inc() // first: a test reads it once a successor leads
	if err := c.node.ForgetLeader(ctx); err != nil {
		return
	}
	rank := c.campaignRank(dead)
	if rank < 0 {
		return // a learner, or removed: it cannot campaign
	}
	c.log.Info("leader's process ended: forgot it, electing a successor", "leader", dead, "rank", rank)
	wait := time.Duration(deathCampaignFirst * float64(c.cfg.TickInterval))
	if rank > 0 {
		wait = time.Duration(rank*deathCampaignStagger) * c.cfg.TickInterval
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.death.kick: // from an election before this one
	default:
	}
	for {
		select {
		case <-t.C:
		case <-c.death.kick:
		case <-ctx.Done():
			return
		case <-c.stopc:
			return
		}
		if !c.death.current(gen) {
			return // a newer report took over
		}
		// Raft is asked, not the state the raft loop publishes, which can
		// lag behind it.
		st := c.node.Status()
		if st.Lead != 0 && st.Lead != dead {
			return // elected, here or elsewhere
		}
		// Never from StateCandidate: a second campaign there starts a
		// new term and throws away the votes on their way. Raft itself
		// refuses it there (CampaignUnlessCandidate, as bootelection.go).
		switch st.RaftState {
		case raft.StateFollower, raft.StatePreCandidate:
			// Counted first, as at boot: the election may be over before
			// the campaign returns, and a test reads this once it is.
			c.met.deathCampaigns.Inc()
			_ = c.campaign.CampaignUnlessCandidate(ctx) // fails only when stopping
		}
		t.Reset(deathCampaignEvery * c.cfg.TickInterval)
	}
}

// campaignRank is this member's place among the voters other than dead,
// by id; -1 when it is not a voter.
func (c *Replica) campaignRank(dead uint64) int {
	voters, _ := c.members()
	if !voters[c.cfg.NodeID] {
		return -1
	}
	ids := make([]uint64, 0, len(voters))
	for id := range voters {
		if id != dead {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Index(ids, c.cfg.NodeID)
}
