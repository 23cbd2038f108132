// This file is corral's, not upstream's (see CORRAL.md).

package raft

import (
	"context"

	pb "go.etcd.io/raft/v3/raftpb"
)

// campaignUnlessCandidate marks a MsgHup that raft ignores in
// StateCandidate (raft.go, Step).
const campaignUnlessCandidate = "CorralCampaignUnlessCandidate"

// CampaignUnlessCandidate is Campaign, except that a node already in
// StateCandidate ignores it, as a leader ignores any campaign. Campaign
// from StateCandidate starts the election over (with PreVote, a new
// pre-election): the votes on their way for the current term are lost
// and the election needs another term. A caller that campaigns again and
// again while no leader is known cannot avoid that by reading Status
// first, since the node may become a candidate between the read and the
// step; here raft decides when it steps the message.
func (n *node) CampaignUnlessCandidate(ctx context.Context) error {
	return n.step(ctx, &pb.Message{Type: pb.MsgHup.Enum(), Context: []byte(campaignUnlessCandidate)})
}
