package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

func TestCoord_ClientSessionLockElectionWatch(t *testing.T) {
	_, base := readyNode(t)
	cl, err := client.New(client.Config{Endpoints: []string{base}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	w := cl.Watch(ctx, "", 0, client.WithProgress(100*time.Millisecond))
	// The first progress event means the watch is established.
	ev := <-w.Events()
	require.Equal(t, client.EventProgress, ev.Type)

	// Sessions keep their keys alive past the TTL.
	s, err := cl.NewSession(ctx, 1500*time.Millisecond)
	require.NoError(t, err)
	_, err = cl.PutWithLease(ctx, "members/a", []byte("up"), s.LeaseID())
	require.NoError(t, err)

	// Three sessions contend for one lock: holders never overlap and
	// tokens strictly grow in grant order.
	var (
		mu      sync.Mutex
		tokens  []int64
		holders atomic.Int32
		wg      sync.WaitGroup
	)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := cl.NewSession(ctx, 5*time.Second)
			if !assertNoErr(t, err) {
				return
			}
			defer sess.Close(ctx)
			l := sess.NewLock("job")
			for range 3 {
				tok, err := l.Lock(ctx)
				if !assertNoErr(t, err) {
					return
				}
				if holders.Add(1) != 1 {
					t.Errorf("client %d: two holders at once", i)
				}
				mu.Lock()
				tokens = append(tokens, tok)
				mu.Unlock()
				holders.Add(-1)
				if !assertNoErr(t, l.Unlock(ctx)) {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, tokens, 9)
	for i := 1; i < len(tokens); i++ {
		require.Greater(t, tokens[i], tokens[i-1])
	}

	// Elections.
	e := s.NewElection("coord")
	epoch, err := e.Campaign(ctx, "node-1")
	require.NoError(t, err)
	info, err := cl.Leader(ctx, "coord")
	require.NoError(t, err)
	require.Equal(t, client.LeaderInfo{Name: "coord", Leader: "node-1", Epoch: epoch, Lease: s.LeaseID()}, info)

	_, err = cl.Register(ctx, "master", "m1", "10.0.0.1:5678", map[string]string{"zone": "a"}, s.LeaseID())
	require.NoError(t, err)
	inst, _, err := cl.Instances(ctx, "master")
	require.NoError(t, err)
	require.Len(t, inst, 1)

	// Revoking the lease from elsewhere: Done closes, keys and the
	// leadership go.
	require.NoError(t, cl.Revoke(ctx, s.LeaseID()))
	select {
	case <-e.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("session Done did not close after its lease was revoked")
	}
	require.ErrorIs(t, s.Err(), client.ErrSessionLost)
	_, err = cl.Get(ctx, "members/a")
	require.ErrorIs(t, err, client.ErrNotFound)
	info, err = cl.Leader(ctx, "coord")
	require.NoError(t, err)
	require.Empty(t, info.Leader)

	// The watch saw every change in revision order, exactly once.
	_, rev, err := cl.List(ctx, "nothing/")
	require.NoError(t, err)
	var last int64
	seen := map[string]int{}
	for last < rev {
		ev := <-w.Events()
		if ev.Type == client.EventProgress {
			continue
		}
		require.Equal(t, last+1, ev.ModRevision, "gap or reorder before %+v", ev)
		last = ev.ModRevision
		seen[ev.Type+" "+ev.Key]++
	}
	require.Equal(t, 1, seen["put members/a"])
	require.Equal(t, 1, seen["delete members/a"])
	require.Equal(t, 9, seen["put _corral/locks/job"])
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// A session whose controllers stop answering is in doubt after the bound
// (well before the server could expire its lease): Done closes.
func TestCoord_ClientSessionDoneOnDisconnect(t *testing.T) {
	c, base := readyNode(t)
	cl, err := client.New(client.Config{Endpoints: []string{base}, Timeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	s, err := cl.NewSession(ctx, 3*time.Second, client.WithDoubtAfter(time.Second))
	require.NoError(t, err)
	l := s.NewLock("x")
	_, err = l.Lock(ctx)
	require.NoError(t, err)
	lost := time.Now()
	require.NoError(t, c.Close())
	select {
	case <-l.Done():
		require.Less(t, time.Since(lost), 3*time.Second, "in doubt only after the lease could have expired")
		require.ErrorIs(t, s.Err(), client.ErrSessionLost)
	case <-time.After(10 * time.Second):
		t.Fatal("Done did not close after the cluster went away")
	}
}

func TestCoord_ClientKeepAliveStream(t *testing.T) {
	_, base := readyNode(t)
	cl, err := client.New(client.Config{Endpoints: []string{base}})
	require.NoError(t, err)
	ctx := context.Background()
	var ids []int64
	for range 3 {
		l, err := cl.Grant(ctx, 2*time.Second)
		require.NoError(t, err)
		ids = append(ids, l.ID)
	}
	ks, err := cl.OpenKeepAliveStream(ctx)
	require.NoError(t, err)
	defer ks.Close()
	// Over twice the TTL on one stream: the leases stay.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		nf, err := ks.KeepAlive(append(ids, 999))
		require.NoError(t, err)
		require.Equal(t, []int64{999}, nf)
		time.Sleep(300 * time.Millisecond) // keep-alive cadence
	}
	l, err := cl.TimeToLive(ctx, ids[0])
	require.NoError(t, err)
	require.Greater(t, l.Remaining, time.Second)
	_, err = ks.KeepAlive(nil)
	require.ErrorIs(t, err, client.ErrBadRequest)
}
