package roles

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/corral-dev/corral/roles/internal/testcluster"
)

// Followers answer each write once: the leader tells them a new commit
// index by notices they do not answer (raft's CommitNotices, which the
// replica sets; third_party/raft/CORRAL.md, "Commit notices"). Upstream's
// raft makes each follower answer a lone write twice.
func TestController_FollowersAnswerEachWriteOnce(t *testing.T) {
	wc := testcluster.New(t, 3, nil)
	lead := wc.WaitLeader(wc.IDs()...)
	var answers, notices atomic.Int64
	wc.Net.Hold(func(from uint64, m *raftpb.Message) bool { // counts, holds nothing
		switch {
		case from != lead && m.GetType() == raftpb.MsgAppResp && !m.GetReject():
			answers.Add(1)
		case from == lead && m.GetType() == raftpb.MsgApp && len(m.GetEntries()) == 0 &&
			string(m.GetContext()) == "corral-commit-notice":
			notices.Add(1)
		}
		return false
	})
	const writes = 100
	for i := range writes {
		_, err := wc.Put(lead, fmt.Sprintf("k%d", i), "v")
		require.NoError(t, err)
	}
	wc.Net.Hold(nil)
	t.Logf("%d writes: %d answers from the followers, %d notices", writes, answers.Load(), notices.Load())
	require.GreaterOrEqual(t, notices.Load(), int64(writes), "the leader sent notices")
	// One answer per write and follower, and a margin for the cluster's
	// own entries; upstream's raft gives 4 per write.
	require.Less(t, answers.Load(), int64(3*writes))
}
