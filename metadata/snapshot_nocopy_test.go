//go:build linux

package metadata

import (
	"fmt"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// readOnlyCopy returns data in a fresh mapping that faults on any write, as
// the snapshot file a controller restores from is mapped.
func readOnlyCopy(t *testing.T, data []byte) []byte {
	t.Helper()
	m, err := syscall.Mmap(-1, 0, len(data), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	require.NoError(t, err)
	copy(m, data)
	require.NoError(t, syscall.Mprotect(m, syscall.PROT_READ))
	// Never unmapped: a State restored from it may still be reachable.
	return m
}

// A State restored without copying refers to the snapshot's bytes, and no
// Apply, read or snapshot of it ever writes into them: here they are
// read-only, so one write would stop the test binary with a fault.
func TestRestoreNoCopyNeverWritesIntoItsSnapshot(t *testing.T) {
	a := newApplier(t)
	a.apply(&Command{Op: OpSetClusterID, Key: "cid"})
	for i := range 200 {
		a.apply(putCmd(fmt.Sprintf("k/%03d", i), fmt.Sprintf("value %d", i)))
	}
	a.apply(putCmd("empty", ""))
	snap, err := a.s.Snapshot()
	require.NoError(t, err)
	data := readOnlyCopy(t, snap)

	r, err := RestoreNoCopy(data)
	require.NoError(t, err)
	ref, err := Restore(snap)
	require.NoError(t, err)
	require.Equal(t, ref.Range("", 0), r.Range("", 0))

	// The values are slices of data, so the copy was really avoided.
	kvs := r.Range("k/", 0)
	require.NotEmpty(t, kvs)
	it, ok := r.kvs.Get(item{key: "k/000"})
	require.True(t, ok)
	lo, hi := uintptr(unsafe.Pointer(&data[0])), uintptr(unsafe.Pointer(&data[len(data)-1]))
	p := uintptr(unsafe.Pointer(&it.value[0]))
	require.True(t, p >= lo && p <= hi, "value not in the snapshot's bytes")
	require.Equal(t, len(it.value), cap(it.value), "an append must allocate, never write past the value")

	// Everything that changes restored keys, applied to both states.
	b := &applier{t: t, s: r, index: a.index}
	c := &applier{t: t, s: ref, index: a.index}
	for _, cmd := range []func(i int) *Command{
		func(i int) *Command { return putCmd(fmt.Sprintf("k/%03d", i), "new") },
		func(i int) *Command { return casCmd(fmt.Sprintf("k/%03d", i+50), "cas", 0) },
		func(i int) *Command { return delCmd(fmt.Sprintf("k/%03d", i+100)) },
		func(i int) *Command { return casDelCmd(fmt.Sprintf("k/%03d", i+150), 1) },
	} {
		for i := range 50 {
			require.Equal(t, c.apply(cmd(i)).Err, b.apply(cmd(i)).Err)
		}
	}
	got, err := r.Snapshot()
	require.NoError(t, err)
	want, err := ref.Snapshot()
	require.NoError(t, err)
	require.Equal(t, want, got)
	for _, kv := range r.Range("", 0) {
		kv.Value = append(kv.Value, '!') // readers get copies
	}
	require.Equal(t, snap, []byte(data), "the snapshot's bytes are unchanged")
}
