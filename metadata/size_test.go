package metadata

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// kvBytesByScan is KVBytes computed the slow way.
func kvBytesByScan(s *State) int64 {
	var n int64
	for _, kv := range s.Range("", 0) {
		n += int64(len(kv.Key) + len(kv.Value))
	}
	return n
}

// TestSize_KVBytesFollowsEveryMutation checks the running count against a
// scan after puts, overwrites, deletes, lease-attached puts and a lease
// revoke that deletes its keys; a restored snapshot has the same count.
func TestSize_KVBytesFollowsEveryMutation(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	check := func(step string) {
		t.Helper()
		require.Equal(t, kvBytesByScan(a.s), a.s.KVBytes(), step)
	}
	check("empty")
	require.NoError(t, a.apply(putCmd("a", "12345")).Err)
	check("put")
	require.NoError(t, a.apply(putCmd("a", "1")).Err)
	check("overwrite smaller")
	require.NoError(t, a.apply(putCmd("bb", "1234567890")).Err)
	check("second key")
	require.Error(t, a.apply(casCmd("bb", "nope", 99)).Err)
	check("refused compare")
	require.NoError(t, a.apply(delCmd("a")).Err)
	check("delete")
	require.NoError(t, a.apply(delCmd("missing")).Err)
	check("delete of a missing key")
	grant, err := NewCoordCommand(OpLeaseGrant, "", LeaseGrantPayload{TTLMS: 10000})
	require.NoError(t, err)
	res := a.apply(grant)
	require.NoError(t, res.Err)
	id := res.Out.(LeaseGrant).ID
	for i := range 3 {
		c, err := NewCoordCommand(OpPutLease, fmt.Sprintf("eph/%d", i), PutLeasePayload{Value: []byte("value"), Lease: id})
		require.NoError(t, err)
		require.NoError(t, a.apply(c).Err)
	}
	check("lease-attached puts")
	require.Equal(t, int64(len("bb")+len("1234567890")+3*len("eph/0value")), a.s.KVBytes())
	revoke, err := NewCoordCommand(OpLeaseRevoke, "", LeaseRevokePayload{IDs: []int64{id}})
	require.NoError(t, err)
	require.NoError(t, a.apply(revoke).Err)
	check("lease revoke")
	require.Equal(t, int64(12), a.s.KVBytes())

	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	r, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, a.s.KVBytes(), r.KVBytes(), "restore recounts")
	require.Equal(t, a.s.Bytes(), r.Bytes(), "snapshot and restore anchor the same estimate")
	into := New()
	require.NoError(t, into.RestoreFrom(snap))
	require.Equal(t, a.s.Bytes(), into.Bytes())
}

// TestSize_BytesCountsJobsAndIsDeterministic: job specs count toward
// Bytes, and two replicas applying the same log agree on the count.
func TestSize_BytesCountsJobsAndIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := newApplier(t), newApplier(t)
	for _, x := range []*applier{a, b} {
		require.NoError(t, x.apply(putCmd("k", "v")).Err)
	}
	before := a.s.Bytes()
	for _, x := range []*applier{a, b} {
		require.NoError(t, x.apply(jobCmd(t, "j", 3, false)).Err)
	}
	require.Greater(t, a.s.Bytes(), before, "a job spec adds to the estimate")
	require.Equal(t, a.s.Bytes(), b.s.Bytes())
	require.Equal(t, a.s.KVBytes(), b.s.KVBytes())
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	r, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, a.s.Bytes(), r.Bytes())
	require.Positive(t, r.Bytes()-r.KVBytes(), "the ext state is counted after a restore")
}

func TestResourcesEffective(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want Resources }{
		{Resources{}, Resources{CPUMillis: MinTaskCPUMillis, MemoryMB: MinTaskMemoryMB}},
		{Resources{CPUMillis: 1, MemoryMB: 1}, Resources{CPUMillis: MinTaskCPUMillis, MemoryMB: MinTaskMemoryMB}},
		{Resources{CPUMillis: 500, MemoryMB: 2}, Resources{CPUMillis: 500, MemoryMB: MinTaskMemoryMB}},
		{Resources{CPUMillis: 500, MemoryMB: 256}, Resources{CPUMillis: 500, MemoryMB: 256}},
	} {
		t.Run(fmt.Sprint(tc.in), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.in.Effective())
		})
	}
}

func TestWorkerMaxAllocs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		label string
		want  int
	}{{"", DefaultMaxAllocs}, {"10", 10}, {"0", DefaultMaxAllocs}, {"-3", DefaultMaxAllocs}, {"many", DefaultMaxAllocs}} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			w := &Worker{Labels: map[string]string{}}
			if tc.label != "" {
				w.Labels[MaxAllocsLabel] = tc.label
			}
			require.Equal(t, tc.want, w.MaxAllocs())
		})
	}
}

// TestSchedulerView_CountsAllocsAndEffectiveResources: zero-resource
// allocations claim the minimum and are counted per worker.
func TestSchedulerView_CountsAllocsAndEffectiveResources(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	require.NoError(t, a.apply(jobCmd(t, "j", 2, false)).Err)
	require.NoError(t, a.apply(planCmd(t, 3, planFor(a, "j",
		NewAlloc{ID: "a1", Worker: "w1", WorkerEpoch: 1}, NewAlloc{ID: "a2", Worker: "w1", WorkerEpoch: 1}))).Err)
	v := a.s.SchedulerView([]string{"j"})
	require.Equal(t, 2, v.Allocs["w1"])
	require.Equal(t, Resources{CPUMillis: 2 * MinTaskCPUMillis, MemoryMB: 2 * MinTaskMemoryMB}, v.Used["w1"])
}
