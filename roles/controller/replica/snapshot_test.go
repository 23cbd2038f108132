package replica

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSnapshotDue(t *testing.T) {
	const every = 10000
	for _, c := range []struct {
		name                                string
		entries, jitter, logBytes, lastSize uint64
		want                                bool
	}{
		{"before every", every - 1, 0, 1 << 30, 0, false},
		{"first snapshot", every, 0, 0, 0, true},
		{"before every and the jitter", every + 99, 100, 1 << 30, 0, false},
		{"after them", every + 100, 100, 0, 0, true},
		{"small state", every, 0, 4 << 20, 2 << 20, true},
		{"large state, little log", every, 0, 4 << 20, 30 << 20, false},
		{"large state, log at half", 3 * every, 0, 15 << 20, 30 << 20, true},
		{"large state, log at half, a member with the largest jitter", 3 * every, every / 2, 15 << 20, 30 << 20, false},
		{"that member, log at the whole state", 3 * every, every / 2, 30 << 20, 30 << 20, true},
		{"a member with a quarter of it, log at half", 3 * every, every / 4, 15 << 20, 30 << 20, false},
		{"that member, log at three quarters", 3 * every, every / 4, 23 << 20, 30 << 20, true},
		{"cap on entries", 10 * every, 0, 1, 1 << 40, true},
		{"cap on entries with the jitter", 10*every + 10*100, 100, 1, 1 << 40, true},
		{"not before it", 10*every + 10*100 - 1, 100, 1, 1 << 40, false},
	} {
		if got := snapshotDue(c.entries, every, c.jitter, c.logBytes, c.lastSize); got != c.want {
			t.Errorf("%s: snapshotDue(%d, %d, %d, %d, %d) = %t, want %t", c.name, c.entries, every, c.jitter, c.logBytes, c.lastSize, got, c.want)
		}
	}
}

// Members with different jitters pass the size rule at different entries
// of the same log, so they do not all snapshot at once.
func TestSnapshotDueSpreadsMembers(t *testing.T) {
	const every, entry, state = 10000, 400, 30 << 20
	firstDue := func(jitter uint64) uint64 {
		for n := uint64(1); ; n++ {
			if snapshotDue(n, every, jitter, n*entry, state) {
				return n
			}
		}
	}
	a, b := firstDue(0), firstDue(every/2)
	require.Equal(t, uint64(state/2/entry+1), a)
	require.Greater(t, b, a+every, "the members' snapshots %d entries apart", b-a)
	require.LessOrEqual(t, b, uint64(state/entry+1))
}
