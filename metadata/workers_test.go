package metadata

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func registerCmd(t *testing.T, id string, epoch, ctrl uint64) *Command {
	t.Helper()
	c, err := NewWorkerCommand(OpWorkerRegister, WorkerRegistration{
		ID: id, Epoch: epoch, Incarnation: "inc-" + id, ControllerEpoch: ctrl, AtMS: 1000 * int64(epoch),
		Labels: map[string]string{"zone": "a", "gpu": "no"}, Capacity: Capacity{CPUMillis: 2000, MemoryMB: 512},
		Addresses: []string{"10.0.0.1:9000"},
	})
	require.NoError(t, err)
	return c
}

func transitionCmd(t *testing.T, op Op, ctrl uint64, refs ...WorkerEpochRef) *Command {
	t.Helper()
	c, err := NewWorkerCommand(op, WorkerTransition{Workers: refs, Reason: "test", ControllerEpoch: ctrl, AtMS: 42})
	require.NoError(t, err)
	return c
}

func TestWorkers_RegisterGrowsEpochAndFenceIsEpochScoped(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 3)).Err)
	w, ok := a.s.Worker("w1")
	require.True(t, ok)
	require.Equal(t, WorkerAlive, w.State)
	require.Equal(t, uint64(1), w.Epoch)
	require.Equal(t, int64(1000), w.RegisteredAtMS)

	// Re-registering must name the next epoch exactly.
	res := a.apply(registerCmd(t, "w1", 1, 3))
	require.ErrorIs(t, res.Err, ErrInvalid)
	res = a.apply(registerCmd(t, "w1", 3, 3))
	require.ErrorIs(t, res.Err, ErrInvalid)
	require.NoError(t, a.apply(registerCmd(t, "w1", 2, 3)).Err)

	// A fence for the old epoch is a no-op.
	require.NoError(t, a.apply(transitionCmd(t, OpWorkerFence, 3, WorkerEpochRef{"w1", 1})).Err)
	w, _ = a.s.Worker("w1")
	require.Equal(t, WorkerAlive, w.State)
	require.Equal(t, uint64(2), w.Epoch)

	// The current epoch is fenced; fencing again changes nothing.
	require.NoError(t, a.apply(transitionCmd(t, OpWorkerFence, 3, WorkerEpochRef{"w1", 2}, WorkerEpochRef{"nobody", 1})).Err)
	w, _ = a.s.Worker("w1")
	require.Equal(t, WorkerFenced, w.State)
	require.Equal(t, int64(42), w.StateChangedAtMS)
	require.NoError(t, a.apply(transitionCmd(t, OpWorkerLeave, 3, WorkerEpochRef{"w1", 2})).Err)
	w, _ = a.s.Worker("w1")
	require.Equal(t, WorkerFenced, w.State, "a fenced worker cannot leave; it must register first")

	// A fenced worker registers again with a higher epoch.
	require.NoError(t, a.apply(registerCmd(t, "w1", 3, 3)).Err)
	require.NoError(t, a.apply(transitionCmd(t, OpWorkerLeave, 3, WorkerEpochRef{"w1", 3})).Err)
	w, _ = a.s.Worker("w1")
	require.Equal(t, WorkerLeft, w.State)
	require.Equal(t, uint64(3), w.Epoch)
}

func TestWorkers_StaleControllerEpochRefused(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 5)).Err)
	before, _ := a.s.Snapshot()
	res := a.apply(transitionCmd(t, OpWorkerFence, 4, WorkerEpochRef{"w1", 1}))
	require.ErrorIs(t, res.Err, ErrInvalid)
	require.ErrorContains(t, res.Err, "stale controller epoch")
	w, _ := a.s.Worker("w1")
	require.Equal(t, WorkerAlive, w.State)
	after, _ := a.s.Snapshot()
	require.Equal(t, stripApplied(t, before), stripApplied(t, after), "a refused command changed the state")
	// The same or a newer leader is accepted.
	require.NoError(t, a.apply(transitionCmd(t, OpWorkerFence, 6, WorkerEpochRef{"w1", 1})).Err)
}

func TestWorkers_BadPayloadsChangeNothing(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 1)).Err)
	before, _ := a.s.Snapshot()
	for _, c := range []*Command{
		{Op: OpWorkerRegister, Value: []byte("{not json")},
		{Op: OpWorkerRegister, Value: []byte(`{"id":"","epoch":1,"incarnation":"x"}`)},
		{Op: OpWorkerRegister, Value: []byte(`{"id":"w2","epoch":0,"incarnation":"x"}`)},
		{Op: OpWorkerFence, Value: []byte(`[]`)},
		{Op: OpWorkerFence, Value: []byte(`{"workers":[]}`)},
		{Op: OpWorkerLeave, Value: []byte(`{"workers":[{"id":"a","epoch":1},{"id":"b","epoch":1}]}`)},
		{Op: OpWorkerRegister, Value: []byte(`{"id":"w9","epoch":1,"incarnation":"x","surprise":true}`)},
	} {
		res := a.apply(c)
		require.ErrorIs(t, res.Err, ErrInvalid, "%s %s", c.Op, c.Value)
	}
	after, _ := a.s.Snapshot()
	require.Equal(t, stripApplied(t, before), stripApplied(t, after))
}

func TestWorkers_SnapshotRoundTripAndDeterminism(t *testing.T) {
	build := func() *State {
		a := newApplier(t)
		a.apply(putCmd("k", "v"))
		for _, id := range []string{"w3", "w1", "w2"} {
			require.NoError(t, a.apply(registerCmd(t, id, 1, 2)).Err)
		}
		require.NoError(t, a.apply(transitionCmd(t, OpWorkerFence, 2, WorkerEpochRef{"w2", 1})).Err)
		return a.s
	}
	s1, s2 := build(), build()
	b1, err := s1.Snapshot()
	require.NoError(t, err)
	b2, err := s2.Snapshot()
	require.NoError(t, err)
	require.Equal(t, b1, b2)
	r, err := Restore(b1)
	require.NoError(t, err)
	require.Equal(t, s1.Workers(), r.Workers())
	require.Len(t, r.Workers(), 3)
	require.Equal(t, "w1", r.Workers()[0].ID)
	w, _ := r.Worker("w2")
	require.Equal(t, WorkerFenced, w.State)
	// The controller epoch guard survives a snapshot too.
	c := transitionCmd(t, OpWorkerFence, 1, WorkerEpochRef{"w1", 1})
	c.ID = 7
	_, res := r.Apply(r.AppliedIndex()+1, c.Marshal())
	require.ErrorIs(t, res.Err, ErrInvalid)
}

func TestWorkers_CopiesAreIndependent(t *testing.T) {
	a := newApplier(t)
	require.NoError(t, a.apply(registerCmd(t, "w1", 1, 1)).Err)
	w, _ := a.s.Worker("w1")
	w.Labels["zone"] = "changed"
	w.Addresses[0] = "changed"
	again, _ := a.s.Worker("w1")
	require.Equal(t, "a", again.Labels["zone"])
	require.Equal(t, "10.0.0.1:9000", again.Addresses[0])
}

// stripApplied returns a snapshot of the state with the applied index
// zeroed, so states that differ only in how many entries they saw compare
// equal.
func stripApplied(t *testing.T, snap []byte) []byte {
	t.Helper()
	s, err := Restore(snap)
	require.NoError(t, err)
	s.mu.Lock()
	s.applied = 0
	s.mu.Unlock()
	b, err := s.Snapshot()
	require.NoError(t, err)
	return b
}
