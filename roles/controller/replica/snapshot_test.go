package replica

import "testing"

func TestSnapshotDue(t *testing.T) {
	const every = 10000
	for _, c := range []struct {
		name                        string
		entries, logBytes, lastSize uint64
		want                        bool
	}{
		{"before every", every - 1, 1 << 30, 0, false},
		{"first snapshot", every, 0, 0, true},
		{"small state", every, 4 << 20, 2 << 20, true},
		{"large state, little log", every, 4 << 20, 30 << 20, false},
		{"large state, log at half", 3 * every, 15 << 20, 30 << 20, true},
		{"cap on entries", 10 * every, 1, 1 << 40, true},
	} {
		if got := snapshotDue(c.entries, every, c.logBytes, c.lastSize); got != c.want {
			t.Errorf("%s: snapshotDue(%d, %d, %d, %d) = %t, want %t", c.name, c.entries, every, c.logBytes, c.lastSize, got, c.want)
		}
	}
}
