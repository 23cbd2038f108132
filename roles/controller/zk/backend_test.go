package zk

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// fakeBackend is one in-memory "cluster": a real metadata.State applied
// in order, a lessor of keep-alive deadlines on a test clock, and every
// Server built on it told of each applied entry (as every controller of a
// cluster is).
type fakeBackend struct {
	st      *metadata.State
	applied atomic.Uint64

	mu        sync.Mutex // serialises applies, as a raft log does
	servers   []*Server
	deadlines map[int64]time.Time
	cond      *sync.Cond

	clock      atomic.Int64 // unix nanos
	leader     atomic.Bool
	proposeErr atomic.Pointer[error]
	keepAlives atomic.Int64
	barriers   atomic.Int64 // LinearizableRead calls
	// bindsProposing counts the binds in OpZNodeBindSession proposals
	// that have not returned yet (stalled behind mu, say).
	bindsProposing atomic.Int64
}

func newFakeBackend() *fakeBackend {
	b := &fakeBackend{st: metadata.New(), deadlines: map[int64]time.Time{}}
	b.cond = sync.NewCond(&b.mu)
	b.clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	b.leader.Store(true)
	return b
}

func (b *fakeBackend) attach(s *Server) {
	b.mu.Lock()
	b.servers = append(b.servers, s)
	b.mu.Unlock()
}

func (b *fakeBackend) detach(s *Server) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, o := range b.servers {
		if o == s {
			b.servers = append(b.servers[:i], b.servers[i+1:]...)
			return
		}
	}
}

func (b *fakeBackend) State() *metadata.State { return b.st }
func (b *fakeBackend) AppliedIndex() uint64   { return b.applied.Load() }
func (b *fakeBackend) IsLeader() bool         { return b.leader.Load() }
func (b *fakeBackend) Now() time.Time         { return time.Unix(0, b.clock.Load()) }
func (b *fakeBackend) advance(d time.Duration) {
	b.clock.Add(int64(d))
}

func (b *fakeBackend) WaitApplied(ctx context.Context, idx uint64) error {
	for b.applied.Load() < idx {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

func (b *fakeBackend) LinearizableRead(context.Context) error {
	b.barriers.Add(1)
	if p := b.proposeErr.Load(); p != nil {
		return *p
	}
	return nil
}

// ProposePayload encodes payload as the server would and proposes it.
func (b *fakeBackend) ProposePayload(ctx context.Context, op metadata.Op, payload any) (metadata.Result, error) {
	cmd, err := command(op, payload)
	if err != nil {
		return metadata.Result{}, err
	}
	return b.Propose(ctx, cmd)
}

func (b *fakeBackend) Propose(ctx context.Context, cmd *metadata.Command) (metadata.Result, error) {
	if p := b.proposeErr.Load(); p != nil {
		return metadata.Result{}, *p
	}
	if cmd.Op == metadata.OpZNodeBindSession {
		var bs metadata.ZNodeBinds
		if err := json.Unmarshal(cmd.Value, &bs); err == nil {
			n := int64(len(bs.Binds))
			b.bindsProposing.Add(n)
			defer b.bindsProposing.Add(-n)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	idx := b.applied.Load() + 1
	cmd.ID = idx
	_, res := b.st.Apply(idx, cmd.Marshal())
	b.applied.Store(idx)
	// The raft loop tells every controller's server, after the state
	// holds the entry.
	for _, s := range b.servers {
		s.Applied(res.ZNodeEvents)
	}
	if cmd.Op == metadata.OpLeaseGrant && res.Err == nil {
		g := res.Out.(metadata.LeaseGrant)
		b.deadlines[g.ID] = b.Now().Add(time.Duration(g.TTLMS) * time.Millisecond)
	}
	return res, nil
}

func (b *fakeBackend) KeepAlive(ctx context.Context, ids []int64) ([]int64, error) {
	b.keepAlives.Add(1)
	if p := b.proposeErr.Load(); p != nil {
		return nil, *p
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var missing []int64
	for _, id := range ids {
		l, ok := b.st.Lease(id)
		d, has := b.deadlines[id]
		if !ok || !has || b.Now().After(d) {
			missing = append(missing, id)
			continue
		}
		b.deadlines[id] = b.Now().Add(time.Duration(l.TTLMS) * time.Millisecond)
	}
	return missing, nil
}

// expire is the leader's lessor: it revokes the leases whose deadline
// passed on the test clock and returns their ids.
func (b *fakeBackend) expire() []int64 {
	b.mu.Lock()
	var ids []int64
	for id, d := range b.deadlines {
		if b.Now().After(d) {
			ids = append(ids, id)
			delete(b.deadlines, id)
		}
	}
	b.mu.Unlock()
	if len(ids) > 0 {
		b.ProposePayload(context.Background(), metadata.OpLeaseRevoke, metadata.LeaseRevokePayload{IDs: ids, Expired: true})
	}
	return ids
}

// expireNow ends one session at once, as the leader's expiry would.
func (b *fakeBackend) expireNow(id int64) {
	b.mu.Lock()
	delete(b.deadlines, id)
	b.mu.Unlock()
	b.ProposePayload(context.Background(), metadata.OpLeaseRevoke, metadata.LeaseRevokePayload{IDs: []int64{id}, Expired: true})
}

func (b *fakeBackend) failWith(err error) {
	if err == nil {
		b.proposeErr.Store(nil)
		return
	}
	b.proposeErr.Store(&err)
}

var errNoLeader = errors.New("no leader")

// Creates, deletes and setData go in binary, value or pointer payloads
// alike; the rest as JSON.
func TestCommandEncoding(t *testing.T) {
	for _, c := range []struct {
		op      metadata.Op
		payload any
		want    metadata.Op
	}{
		{metadata.OpZNodeCreate, &metadata.ZNodeCreate{Path: "/a"}, metadata.OpZNodeWrite},
		{metadata.OpZNodeDelete, metadata.ZNodeDelete{Path: "/a", Version: -1}, metadata.OpZNodeWrite},
		{metadata.OpZNodeSetData, &metadata.ZNodeSetData{Path: "/a"}, metadata.OpZNodeWrite},
		{metadata.OpZNodeMulti, metadata.ZNodeMulti{}, metadata.OpZNodeMulti},
		{metadata.OpLeaseGrant, metadata.LeaseGrantPayload{TTLMS: 1}, metadata.OpLeaseGrant},
	} {
		cmd, err := command(c.op, c.payload)
		require.NoError(t, err)
		require.Equal(t, c.want, cmd.Op, "%s", c.op)
	}
}
