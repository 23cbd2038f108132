package replica

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

func histogram(t *testing.T, h prometheus.Histogram) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram()
}

// A late tick is measured, and one at half an election timeout or more
// is named in a warning, at most once per stallWarnQuiet.
func TestStallWatchMeasuresAndWarnsOfALateTick(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d", Buckets: []float64{0.01, 0.1, 1}})
	var logged bytes.Buffer
	w := newStallWatch(h, slog.New(slog.NewTextHandler(&logged, nil)), msgTickLate, 100*time.Millisecond, 7)
	require.Equal(t, 350*time.Millisecond, w.warnAt)
	warnings := func() int { return strings.Count(logged.String(), msgTickLate) }

	t0 := time.Unix(1000, 0)
	w.tickTaken(t0, t0.Add(2*time.Millisecond)) // on time
	require.Zero(t, warnings())
	w.tickTaken(t0.Add(100*time.Millisecond), t0.Add(400*time.Millisecond)) // late, not yet worth a word
	require.Zero(t, warnings())
	w.tickTaken(t0.Add(time.Second), t0.Add(2200*time.Millisecond)) // a stall of over a second
	require.Equal(t, 1, warnings())
	require.Contains(t, logged.String(), "late=1.2s")
	w.tickTaken(t0.Add(3*time.Second), t0.Add(3500*time.Millisecond)) // again within the quiet time
	require.Equal(t, 1, warnings())
	w.tickTaken(t0.Add(15*time.Second), t0.Add(15500*time.Millisecond)) // past it: said, with the one held back
	require.Equal(t, 2, warnings())
	require.Contains(t, logged.String(), "not_logged_since_last=1")

	hist := histogram(t, h)
	require.Equal(t, uint64(5), hist.GetSampleCount())
	require.Equal(t, uint64(1), hist.GetBucket()[0].GetCumulativeCount(), "one tick under 10 ms")
	require.Equal(t, uint64(1), hist.GetBucket()[1].GetCumulativeCount(), "none between 10 and 100 ms")
	require.Equal(t, uint64(4), hist.GetBucket()[2].GetCumulativeCount(), "the stall of 1.2 s above a second")
}

// A leader's rounds of heartbeats are timed from one to the next, never
// across a stretch in which it did not lead.
func TestBeatWatchTimesALeadersRounds(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "b", Buckets: []float64{0.15, 1}})
	var logged bytes.Buffer
	b := beatWatch{stallWatch: newStallWatch(h, slog.New(slog.NewTextHandler(&logged, nil)), msgBeatLate, 100*time.Millisecond, 7)}
	t0 := time.Unix(1000, 0)
	b.sent(t0) // the first round has nothing to follow
	require.Zero(t, histogram(t, h).GetSampleCount())
	b.sent(t0.Add(100 * time.Millisecond))
	b.sent(t0.Add(1300 * time.Millisecond)) // stalled for 1.1 s
	require.Equal(t, 1, strings.Count(logged.String(), msgBeatLate))
	b.stop()                        // lost the lead
	b.sent(t0.Add(9 * time.Second)) // leading again: not a gap of 7.7 s
	b.sent(t0.Add(9100 * time.Millisecond))
	hist := histogram(t, h)
	require.Equal(t, uint64(3), hist.GetSampleCount())
	require.Equal(t, uint64(2), hist.GetBucket()[0].GetCumulativeCount())
	require.Equal(t, uint64(2), hist.GetBucket()[1].GetCumulativeCount(), "the 1.1 s gap")
}
