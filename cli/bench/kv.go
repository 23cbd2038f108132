package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

const maxBenchValueSize = 1 << 20 // the API's value limit

func (e Env) kvCommand() *cli.Command {
	return &cli.Command{
		Name:  "kv",
		Usage: "run concurrent clients doing puts, then linearizable gets, and report throughput and latency",
		Description: "Each op in --ops runs for --duration with --clients concurrent clients (each with its own\n" +
			"connections). Puts cycle through --keys keys; gets read random keys among them.\n" +
			"Example: corral bench kv --clients 16 --duration 10s --value-size 256\n" +
			"With --kill-leader-every (puts only) the leader is killed and restarted on that schedule, as in\n" +
			"bench workers, and the report gives each kill's longest gap between acknowledged writes:\n" +
			"   corral bench kv --endpoints E1,E2,E3 --timeout 250ms --ops put --clients 8 --duration 66s \\\n" +
			"     --kill-leader-every 6s --kills 10",
		Flags: append(append(e.ClientFlags(),
			&cli.IntFlag{Name: "clients", Value: 8, EnvVars: e.EnvVars("clients"), Usage: "concurrent clients"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, EnvVars: e.EnvVars("duration"),
				Usage: "how long each op runs"},
			&cli.IntFlag{Name: "value-size", Value: 256, EnvVars: e.EnvVars("value-size"), Usage: "bytes per value"},
			&cli.IntFlag{Name: "keys", Value: 1000, EnvVars: e.EnvVars("keys"), Usage: "distinct keys to use"},
			&cli.StringFlag{Name: "ops", Value: "put,get", EnvVars: e.EnvVars("ops"),
				Usage: "comma-separated ops to run in order: put, get"},
			&cli.StringFlag{Name: "key-prefix", Value: "bench/", EnvVars: e.EnvVars("key-prefix"),
				Usage: "prefix of the keys the benchmark writes"},
		), e.failoverFlags()...),
		Action: e.kvAction,
	}
}

// benchConfig is the validated form of bench kv's flags.
type benchConfig struct {
	clients   int
	duration  time.Duration
	valueSize int
	keys      int
	ops       []string
	prefix    string
	failover  failoverConfig // --kill-leader-every, --kills (kv_failover.go)
}

func benchKVConfig(c *cli.Context) (benchConfig, error) {
	cfg := benchConfig{clients: c.Int("clients"), duration: c.Duration("duration"), valueSize: c.Int("value-size"),
		keys: c.Int("keys"), ops: splitList(c.String("ops")), prefix: c.String("key-prefix")}
	switch {
	case cfg.clients < 1 || cfg.clients > 10000:
		return cfg, fmt.Errorf("--clients must be between 1 and 10000, got %d", cfg.clients)
	case cfg.duration <= 0:
		return cfg, fmt.Errorf("--duration must be positive, e.g. 10s; got %s", cfg.duration)
	case cfg.valueSize < 0 || cfg.valueSize > maxBenchValueSize:
		return cfg, fmt.Errorf("--value-size must be between 0 and %d bytes, got %d", maxBenchValueSize, cfg.valueSize)
	case cfg.keys < 1:
		return cfg, fmt.Errorf("--keys must be at least 1, got %d", cfg.keys)
	case len(cfg.ops) == 0:
		return cfg, errors.New("--ops is empty; use put, get or put,get")
	}
	for _, op := range cfg.ops {
		if op != "put" && op != "get" {
			return cfg, fmt.Errorf("unknown op %q in --ops; use put, get or put,get", op)
		}
	}
	var err error
	if cfg.failover, err = parseFailover(c.Duration("kill-leader-every"), c.Int("kills"), c.IsSet("kills"),
		cfg.duration); err != nil {
		return cfg, err
	}
	if cfg.failover.on() && !slices.Equal(cfg.ops, []string{"put"}) {
		return cfg, fmt.Errorf("--kill-leader-every measures the gap between acknowledged writes: use it with --ops put, not %q",
			c.String("ops"))
	}
	return cfg, nil
}

func (e Env) kvAction(c *cli.Context) error {
	if err := e.WantArgs(c, 0); err != nil {
		return err
	}
	cfg, err := benchKVConfig(c)
	if err != nil {
		return err
	}
	// One client per worker, so workers do not share a connection pool (like separate processes would).
	clients := make([]*client.Client, cfg.clients)
	for i := range clients {
		if clients[i], err = e.NewClient(c); err != nil {
			return err
		}
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	st, err := clients[0].Cluster(ctx)
	if err != nil {
		return e.Explain("reach the cluster before benchmarking", err)
	}
	fmt.Fprintf(c.App.Writer, "bench kv: cluster %s (leader %d), %d clients, %s per op, %d-byte values, %d keys\n\n",
		orDash(st.ClusterID), st.LeaderID, cfg.clients, cfg.duration, cfg.valueSize, cfg.keys)

	var results []opResult
	var failoverErr error
	for _, op := range cfg.ops {
		if ctx.Err() != nil {
			break // interrupted: report what ran
		}
		if cfg.failover.on() {
			r, err := e.runKVFailover(ctx, c, cfg.failover, func() opResult { return runBenchOp(ctx, clients, op, cfg) })
			if r.op == "" {
				return err // refused before any write
			}
			results, failoverErr = append(results, r), err
			continue
		}
		results = append(results, runBenchOp(ctx, clients, op, cfg))
	}
	if err := printBenchResults(c.App.Writer, results); err != nil {
		return err
	}
	for _, r := range results {
		if r.firstErr != nil {
			fmt.Fprintf(c.App.ErrWriter, "%s: first error: %v\n", r.op, r.firstErr)
		}
	}
	for _, r := range results {
		if r.count == 0 && r.errors > 0 {
			return e.Explain(fmt.Sprintf("every %s failed", r.op), r.firstErr)
		}
	}
	return failoverErr
}

// opResult is what one op's run measured.
type opResult struct {
	op        string
	count     int             // successful operations
	errors    int             // failed operations
	elapsed   time.Duration   // wall time of the run
	latencies []time.Duration // successful operations' latencies, sorted ascending
	acks      []time.Time     // when each success was acknowledged (only with --kill-leader-every)
	firstErr  error
}

func (r opResult) opsPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.count) / r.elapsed.Seconds()
}

// workerResult is one worker's share; each worker owns its slice, so recording a latency needs no lock.
type workerResult struct {
	latencies []time.Duration
	acks      []time.Time
	errors    int
	firstErr  error
}

// runBenchOp runs op on every client until cfg.duration has passed or ctx ends. In-flight requests are allowed to
// finish (bounded by --timeout), so the run ends at most one request timeout after the deadline.
func runBenchOp(ctx context.Context, clients []*client.Client, op string, cfg benchConfig) opResult {
	value := make([]byte, cfg.valueSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	start := time.Now()
	deadline := start.Add(cfg.duration)
	per := make([]workerResult, len(clients))
	var wg sync.WaitGroup
	for w, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(w)))
			res := &per[w]
			for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
				var err error
				t0 := time.Now()
				switch op {
				case "put":
					// Workers interleave so that together they cover all keys.
					key := benchKey(cfg.prefix, (w+i*len(clients))%cfg.keys)
					_, err = cl.Put(ctx, key, value)
				case "get":
					_, err = cl.Get(ctx, benchKey(cfg.prefix, rng.IntN(cfg.keys)))
					if errors.Is(err, client.ErrNotFound) {
						err = nil // a completed linearizable read of a key no put reached yet
					}
				}
				lat := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						break // interrupted by Ctrl-C, not a failure of the cluster
					}
					res.errors++
					if res.firstErr == nil {
						res.firstErr = err
					}
					continue
				}
				res.latencies = append(res.latencies, lat)
				if cfg.failover.on() {
					res.acks = append(res.acks, t0.Add(lat))
				}
			}
		}()
	}
	wg.Wait()
	r := opResult{op: op, elapsed: time.Since(start)}
	lats := make([][]time.Duration, len(per))
	for i, p := range per {
		lats[i] = p.latencies
		r.acks = append(r.acks, p.acks...)
		r.errors += p.errors
		if r.firstErr == nil {
			r.firstErr = p.firstErr
		}
	}
	r.latencies = mergeLatencies(lats)
	r.count = len(r.latencies)
	return r
}

func benchKey(prefix string, i int) string {
	return fmt.Sprintf("%s%08d", prefix, i)
}

// mergeLatencies concatenates the workers' latency slices and sorts the result ascending.
func mergeLatencies(per [][]time.Duration) []time.Duration {
	n := 0
	for _, p := range per {
		n += len(p)
	}
	all := make([]time.Duration, 0, n)
	for _, p := range per {
		all = append(all, p...)
	}
	slices.Sort(all)
	return all
}

// percentile returns the p-th percentile (0 < p <= 100) of an ascending slice by the nearest-rank method: the
// smallest sample such that at least p% of the samples are less than or equal to it. It returns 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func printBenchResults(w io.Writer, results []opResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join([]string{"OP", "COUNT", "ERRORS", "OPS/S", "P50", "P99", "MAX", ""}, "\t"))
	for _, r := range results {
		var maxLat time.Duration
		if len(r.latencies) > 0 {
			maxLat = r.latencies[len(r.latencies)-1]
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%s\t%s\t%s\t\n", r.op, r.count, r.errors, r.opsPerSec(),
			formatLatency(percentile(r.latencies, 50)), formatLatency(percentile(r.latencies, 99)),
			formatLatency(maxLat))
	}
	return tw.Flush()
}
