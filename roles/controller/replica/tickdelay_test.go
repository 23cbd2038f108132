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

// A late tick is measured, and one at half an election timeout or more
// is named in a warning, at most once per tickWarnQuiet.
func TestTickWatchMeasuresAndWarnsOfALateTick(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d", Buckets: []float64{0.01, 0.1, 1}})
	var logged bytes.Buffer
	w := newTickWatch(h, slog.New(slog.NewTextHandler(&logged, nil)), 100*time.Millisecond, 7)
	require.Equal(t, 350*time.Millisecond, w.warnAt)
	warnings := func() int { return strings.Count(logged.String(), "raft loop took a tick late") }

	t0 := time.Unix(1000, 0)
	w.observe(t0, t0.Add(2*time.Millisecond)) // on time
	require.Zero(t, warnings())
	w.observe(t0.Add(100*time.Millisecond), t0.Add(400*time.Millisecond)) // late, not yet worth a word
	require.Zero(t, warnings())
	w.observe(t0.Add(time.Second), t0.Add(2200*time.Millisecond)) // a stall of over a second
	require.Equal(t, 1, warnings())
	require.Contains(t, logged.String(), "late=1.2s")
	w.observe(t0.Add(3*time.Second), t0.Add(3500*time.Millisecond)) // again within the quiet time
	require.Equal(t, 1, warnings())
	w.observe(t0.Add(15*time.Second), t0.Add(15500*time.Millisecond)) // past it: said, with the one held back
	require.Equal(t, 2, warnings())
	require.Contains(t, logged.String(), "late_ticks_not_logged=1")

	var m dto.Metric
	require.NoError(t, h.Write(&m))
	require.Equal(t, uint64(5), m.GetHistogram().GetSampleCount())
	require.Equal(t, uint64(1), m.GetHistogram().GetBucket()[0].GetCumulativeCount(), "one tick under 10 ms")
	require.Equal(t, uint64(1), m.GetHistogram().GetBucket()[1].GetCumulativeCount(), "none between 10 and 100 ms")
	require.Equal(t, uint64(4), m.GetHistogram().GetBucket()[2].GetCumulativeCount(), "the stall of 1.2 s above a second")
}
