package metadata

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func coordCmd(t testing.TB, op Op, key string, p any) *Command {
	c, err := NewCoordCommand(op, key, p)
	require.NoError(t, err)
	return c
}

func grant(t testing.TB, a *applier, ttl int64) int64 {
	res := a.apply(coordCmd(t, OpLeaseGrant, "", LeaseGrantPayload{TTLMS: ttl}))
	require.NoError(t, res.Err)
	return res.Out.(LeaseGrant).ID
}

func TestLeaseGrantRevokeDeletesKeys(t *testing.T) {
	a := newApplier(t)
	id := grant(t, a, 5000)
	require.Equal(t, int64(1), id)
	require.Equal(t, int64(2), grant(t, a, 5000))

	res := a.apply(coordCmd(t, OpPutLease, "eph/a", PutLeasePayload{Value: []byte("x"), Lease: id}))
	require.NoError(t, res.Err)
	require.Len(t, res.Events, 1)
	require.Equal(t, id, res.Events[0].Lease)
	a.apply(coordCmd(t, OpPutLease, "eph/b", PutLeasePayload{Value: []byte("y"), Lease: id}))
	a.apply(coordCmd(t, OpPutLease, "eph/c", PutLeasePayload{Value: []byte("z"), Lease: id}))
	// A plain put detaches eph/c from the lease.
	require.NoError(t, a.apply(putCmd("eph/c", "plain")).Err)
	require.Equal(t, int64(0), a.s.KeyLease("eph/c"))

	res = a.apply(coordCmd(t, OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{id}}))
	require.NoError(t, res.Err)
	require.Len(t, res.Events, 2)
	require.Equal(t, EventDelete, res.Events[0].Type)
	require.Equal(t, "eph/a", res.Events[0].Key)
	require.Equal(t, res.Events[0].ModRevision+1, res.Events[1].ModRevision)
	_, ok := a.s.Get("eph/a")
	require.False(t, ok)
	_, ok = a.s.Get("eph/c")
	require.True(t, ok)
	_, ok = a.s.Lease(id)
	require.False(t, ok)

	// Unknown lease: refused without any change.
	rev := a.s.Revision()
	res = a.apply(coordCmd(t, OpPutLease, "eph/d", PutLeasePayload{Value: []byte("x"), Lease: id}))
	require.True(t, errors.Is(res.Err, ErrLeaseNotFound))
	require.Equal(t, rev, a.s.Revision())
	res = a.apply(coordCmd(t, OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{id}}))
	require.True(t, errors.Is(res.Err, ErrLeaseNotFound))
	// Expiry batches skip gone leases.
	require.NoError(t, a.apply(coordCmd(t, OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{id, 2}, Expired: true})).Err)

	// Bad input.
	for _, c := range []*Command{
		coordCmd(t, OpLeaseGrant, "", LeaseGrantPayload{TTLMS: 10}),
		{Op: OpLeaseGrant, Value: []byte("{")},
		{Op: OpLeaseGrant, Value: []byte(`{"ttl_ms":5000,"bogus":1}`)},
		coordCmd(t, OpPutLease, SystemPrefix+"x", PutLeasePayload{Lease: 2}),
		coordCmd(t, OpDeleteSystem, SystemPrefix+"locks/x", struct{}{}),
		coordCmd(t, OpLockAcquire, "plain", LockPayload{Lease: 1}),
	} {
		require.True(t, errors.Is(a.apply(c).Err, ErrInvalid), "%v", c.Op)
	}
}

func TestLockFIFOAndTokens(t *testing.T) {
	a := newApplier(t)
	l1, l2, l3 := grant(t, a, 5000), grant(t, a, 5000), grant(t, a, 5000)
	const key = SystemPrefix + "locks/x"
	acq := func(l int64) LockStatus {
		res := a.apply(coordCmd(t, OpLockAcquire, key, LockPayload{Lease: l, Owner: "o"}))
		require.NoError(t, res.Err)
		return res.Out.(LockStatus)
	}
	s1 := acq(l1)
	require.True(t, s1.Held)
	require.Equal(t, s1.Token, a.s.Revision())
	require.Equal(t, 1, acq(l2).Position)
	require.Equal(t, 2, acq(l3).Position)
	require.Equal(t, s1, acq(l1)) // idempotent

	// Try-lock while held: not queued.
	l4 := grant(t, a, 5000)
	res := a.apply(coordCmd(t, OpLockAcquire, key, LockPayload{Lease: l4, NoWait: true}))
	require.False(t, res.Out.(LockStatus).Held)
	require.Zero(t, res.Out.(LockStatus).Position)

	// l1's lease expires: l2 gets the lock with a larger token.
	res = a.apply(coordCmd(t, OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{l1}, Expired: true}))
	require.NoError(t, res.Err)
	lk, ok := a.s.LockState(key)
	require.True(t, ok)
	require.Equal(t, l2, lk.Holder.Lease)
	require.Greater(t, lk.Holder.Token, s1.Token)
	require.Len(t, res.Events, 2) // delete of l1's holder key, put of l2's

	// l3 gives up waiting; only-waiting release of the holder keeps it.
	res = a.apply(coordCmd(t, OpLockRelease, key, LockPayload{Lease: l3, WaitingOnly: true}))
	require.False(t, res.Out.(LockStatus).Held)
	res = a.apply(coordCmd(t, OpLockRelease, key, LockPayload{Lease: l2, WaitingOnly: true}))
	require.True(t, res.Out.(LockStatus).Held)
	tok2 := res.Out.(LockStatus).Token

	// Snapshot round trip keeps holders and the next grant's token grows.
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	r, err := Restore(snap)
	require.NoError(t, err)
	a.s = r
	require.NoError(t, a.apply(coordCmd(t, OpLockRelease, key, LockPayload{Lease: l2})).Err)
	_, ok = a.s.LockState(key)
	require.False(t, ok)
	s3 := acq(l3)
	require.True(t, s3.Held)
	require.Greater(t, s3.Token, tok2)

	// A waiter whose lease is gone is never granted: revoking removes it.
	l5 := grant(t, a, 5000)
	require.Equal(t, 1, acq(l5).Position)
	a.apply(coordCmd(t, OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{l5}}))
	require.NoError(t, a.apply(coordCmd(t, OpLockRelease, key, LockPayload{Lease: l3})).Err)
	_, ok = a.s.LockState(key)
	require.False(t, ok)
	_, ok = a.s.Get(key)
	require.False(t, ok)
}

func FuzzCoordPayload(f *testing.F) {
	f.Add(byte(30), "", []byte(`{"ttl_ms":5000}`))
	f.Add(byte(32), "k", []byte(`{"value":"eA==","lease":1}`))
	f.Add(byte(33), SystemPrefix+"l", []byte(`{"lease":1}`))
	f.Add(byte(34), SystemPrefix+"l", []byte(`{"lease":1,"waiting_only":true}`))
	f.Add(byte(31), "", []byte(`{"ids":[1],"expired":true}`))
	f.Fuzz(func(t *testing.T, op byte, key string, payload []byte) {
		a := newApplier(t)
		grant(t, a, 5000)
		c := &Command{Op: Op(30 + op%5), Key: key, Value: payload}
		a.apply(c)
		snap, err := a.s.Snapshot()
		require.NoError(t, err)
		_, err = Restore(snap)
		require.NoError(t, err)
	})
}

// Random coordination histories are deterministic: two replicas, and a
// replica restored from a snapshot taken midway, end with identical bytes.
func TestCoordDeterministicWithSnapshots(t *testing.T) {
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		var cmds []*Command
		for range 300 {
			lease := int64(rng.IntN(8) + 1)
			key := fmt.Sprintf("k%d", rng.IntN(6))
			lock := fmt.Sprintf("%slocks/l%d", SystemPrefix, rng.IntN(3))
			var c *Command
			switch rng.IntN(8) {
			case 0:
				c = coordCmd(t, OpLeaseGrant, "", LeaseGrantPayload{TTLMS: 5000})
			case 1:
				c = coordCmd(t, OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{lease}, Expired: rng.IntN(2) == 0})
			case 2:
				c = coordCmd(t, OpPutLease, key, PutLeasePayload{Value: []byte("v"), Lease: lease})
			case 3:
				c = putCmd(key, "plain")
			case 4:
				c = delCmd(key)
			case 5, 6:
				c = coordCmd(t, OpLockAcquire, lock, LockPayload{Lease: lease, NoWait: rng.IntN(3) == 0})
			default:
				c = coordCmd(t, OpLockRelease, lock, LockPayload{Lease: lease, WaitingOnly: rng.IntN(3) == 0})
			}
			cmds = append(cmds, c)
		}
		a, b := newApplier(t), newApplier(t)
		var mid []byte
		var tokens = map[string]int64{}
		for i, c := range cmds {
			ra, rb := a.apply(c), b.apply(c)
			require.Equal(t, ra.Revision, rb.Revision)
			require.Equal(t, ra.Events, rb.Events)
			for _, ev := range ra.Events {
				if ev.Type == EventPut && strings.HasPrefix(ev.Key, SystemPrefix) {
					require.Greater(t, ev.ModRevision, tokens[ev.Key], "fencing token did not grow")
					tokens[ev.Key] = ev.ModRevision
				}
			}
			if i == len(cmds)/2 {
				var err error
				mid, err = a.s.Snapshot()
				require.NoError(t, err)
			}
		}
		r, err := Restore(mid)
		require.NoError(t, err)
		ra := &applier{t: t, s: r, index: uint64(len(cmds)/2 + 1)}
		for _, c := range cmds[len(cmds)/2+1:] {
			ra.apply(c)
		}
		sa, _ := a.s.Snapshot()
		sb, _ := b.s.Snapshot()
		sr, _ := ra.s.Snapshot()
		require.Equal(t, sa, sb)
		require.Equal(t, sa, sr)
		// Every ephemeral key belongs to a live lease; every lock holder's
		// key exists.
		for k, id := range a.s.ext.KeyLeases {
			require.NotNil(t, a.s.ext.Leases[id], "key %s", k)
		}
		for k, lk := range a.s.ext.Locks {
			require.NotNil(t, lk.Holder, "lock %s has waiters but no holder", k)
			require.NotNil(t, a.s.ext.Leases[lk.Holder.Lease])
			_, ok := a.s.Get(k)
			require.True(t, ok)
		}
	}
}
