package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWriteGaps_LongestSilenceAroundEachKill(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	acks := []time.Time{at(100), at(200), at(990), // kill 1 at 1000
		at(2100), at(2150), at(2900), // the gap 990 -> 2100 is kill 1's; 2150 -> 2900 is longer than nothing
		at(5000), // kill 2 at 4000: last ack before it is 2900
		// kill 3 at 8000: nothing acknowledged after it
	}
	kills := []killRecord{{n: 1, at: at(1000)}, {n: 2, at: at(4000)}, {n: 3, at: at(8000)}}
	gaps := writeGaps(kills, acks, at(9000))
	require.Len(t, gaps, 3)
	require.Equal(t, 1110*time.Millisecond, gaps[0].gap)
	require.Equal(t, at(990), gaps[0].from)
	require.Equal(t, at(2100), gaps[0].to)
	require.True(t, gaps[0].resumed)
	require.Equal(t, 2100*time.Millisecond, gaps[1].gap, "from the last write before the kill")
	require.False(t, gaps[2].resumed)
	require.Equal(t, 4000*time.Millisecond, gaps[2].gap, "until the end when nothing was acknowledged")

	var out bytes.Buffer
	require.NoError(t, printWriteGaps(&out, gaps, t0))
	require.Contains(t, out.String(), "median 2.1s, max 4s")
	require.Contains(t, out.String(), "no write acknowledged after the kill")
}

func TestWriteGaps_NoAcksAtAll(t *testing.T) {
	t0 := time.Now()
	gaps := writeGaps([]killRecord{{n: 1, at: t0.Add(time.Second)}}, nil, t0.Add(3*time.Second))
	require.Equal(t, 2*time.Second, gaps[0].gap)
	require.False(t, gaps[0].resumed)
}

func TestMedian(t *testing.T) {
	require.Zero(t, median(nil))
	require.Equal(t, 2*time.Second, median([]time.Duration{time.Second, 2 * time.Second, 9 * time.Second}))
	require.Equal(t, 1500*time.Millisecond, median([]time.Duration{time.Second, 2 * time.Second}))
}

// The kill flags are checked before the bench looks for a cluster, and only go with puts.
func TestBenchKVRefusesKillsWithReadsOrThatDoNotFit(t *testing.T) {
	// Not parallel: run() drives urfave/cli, whose help flag is shared global state.
	_, _, err := run(t, "bench", "kv", "--endpoints", "http://127.0.0.1:1", "--duration", "20s", "--kill-leader-every", "6s",
		"--kills", "4", "--ops", "put")
	require.ErrorContains(t, err, "use --duration 30s or more")
	_, _, err = run(t, "bench", "kv", "--endpoints", "http://127.0.0.1:1", "--duration", "60s", "--kill-leader-every", "6s")
	require.ErrorContains(t, err, "use it with --ops put")
}
