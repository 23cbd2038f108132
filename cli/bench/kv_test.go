package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p50", []time.Duration{ms(7)}, 50, ms(7)},
		{"single p99", []time.Duration{ms(7)}, 99, ms(7)},
		{"two p50 is the lower", []time.Duration{ms(1), ms(9)}, 50, ms(1)},
		{"two p99 is the upper", []time.Duration{ms(1), ms(9)}, 99, ms(9)},
		{"hundred p50", hundred, 50, ms(50)},
		{"hundred p99", hundred, 99, ms(99)},
		{"hundred p100", hundred, 100, ms(100)},
		{"hundred tiny p", hundred, 0.001, ms(1)},
		{"p0 clamps to min", hundred, 0, ms(1)},
		{"p above 100 clamps to max", hundred, 150, ms(100)},
		{"ten p99 is the max", hundred[:10], 99, ms(10)},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, percentile(tt.sorted, tt.p), tt.name)
	}
}

func TestMergeLatencies(t *testing.T) {
	got := mergeLatencies([][]time.Duration{{5, 1, 9}, nil, {3}, {2, 8}})
	require.Equal(t, []time.Duration{1, 2, 3, 5, 8, 9}, got)
	require.Empty(t, mergeLatencies(nil))
}

func TestBenchKV(t *testing.T) {
	f, url := newFakeAPI(t)
	out, _, err := run(t, "bench", "kv", "--endpoints", url, "--clients", "3", "--duration", "150ms",
		"--value-size", "16", "--keys", "10")
	require.NoError(t, err)
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if fl := strings.Fields(l); len(fl) == 7 {
			rows[fl[0]] = fl
		}
	}
	require.Equal(t, []string{"OP", "COUNT", "ERRORS", "OPS/S", "P50", "P99", "MAX"}, rows["OP"])
	for _, op := range []string{"put", "get"} {
		require.Contains(t, rows, op)
		require.NotEqual(t, "0", rows[op][1], "%s count", op)
		require.Equal(t, "0", rows[op][2], "%s errors", op)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.kvs, 10, "puts cover every key")
	require.Len(t, f.kvs["bench/00000003"].value, 16)
}

func TestBenchKVUnreachable(t *testing.T) {
	_, _, err := run(t, "bench", "kv", "--endpoints", "http://127.0.0.1:1", "--duration", "50ms")
	require.ErrorContains(t, err, "reach the cluster before benchmarking")
}
