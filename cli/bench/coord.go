package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

func (e Env) coordFlags(extra ...cli.Flag) []cli.Flag {
	return append(append(e.ClientFlags(),
		&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, EnvVars: e.EnvVars("duration"), Usage: "how long to run"},
	), extra...)
}

func (e Env) lockCommand() *cli.Command {
	return &cli.Command{
		Name:  "lock",
		Usage: "contended lock acquire/release: --clients sessions take turns on one lock",
		Flags: e.coordFlags(
			&cli.IntFlag{Name: "clients", Value: 8, EnvVars: e.EnvVars("clients"), Usage: "contending sessions"},
			&cli.StringFlag{Name: "lock", Value: "bench-lock", EnvVars: e.EnvVars("lock"), Usage: "lock name"},
		),
		Action: func(c *cli.Context) error {
			n := c.Int("clients")
			if n <= 0 {
				return fmt.Errorf("--clients must be positive, got %d", n)
			}
			ctx := c.Context
			per := make([]workerResult, n)
			var wg sync.WaitGroup
			start := time.Now()
			deadline := start.Add(c.Duration("duration"))
			for w := range n {
				cl, err := e.NewClient(c)
				if err != nil {
					return err
				}
				s, err := cl.NewSession(ctx, 10*time.Second)
				if err != nil {
					return e.Explain("bench lock: create session", err)
				}
				defer s.Close(context.Background())
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := s.NewLock(c.String("lock"))
					res := &per[w]
					for ctx.Err() == nil && time.Now().Before(deadline) {
						t0 := time.Now()
						lctx, cancel := context.WithDeadline(ctx, deadline.Add(time.Second))
						_, err := l.Lock(lctx)
						cancel()
						if err == nil {
							err = l.Unlock(ctx)
						}
						if err != nil {
							if ctx.Err() != nil || time.Now().After(deadline) {
								break
							}
							res.errors++
							if res.firstErr == nil {
								res.firstErr = err
							}
							continue
						}
						res.latencies = append(res.latencies, time.Since(t0))
					}
				}()
			}
			wg.Wait()
			r := collect("lock+unlock", per, time.Since(start))
			return report(c, r)
		},
	}
}

func collect(op string, per []workerResult, elapsed time.Duration) opResult {
	r := opResult{op: op, elapsed: elapsed}
	lats := make([][]time.Duration, len(per))
	for i, p := range per {
		lats[i] = p.latencies
		r.errors += p.errors
		if r.firstErr == nil {
			r.firstErr = p.firstErr
		}
	}
	r.latencies = mergeLatencies(lats)
	r.count = len(r.latencies)
	return r
}

func report(c *cli.Context, results ...opResult) error {
	if err := printBenchResults(c.App.Writer, results); err != nil {
		return err
	}
	for _, r := range results {
		if r.firstErr != nil {
			fmt.Fprintf(c.App.ErrWriter, "%s: first error: %v\n", r.op, r.firstErr)
		}
	}
	return nil
}

func (e Env) leaseCommand() *cli.Command {
	return &cli.Command{
		Name:  "lease",
		Usage: "keep --leases leases alive with batched keep-alives and report keep-alives per second",
		Flags: e.coordFlags(
			&cli.IntFlag{Name: "leases", Value: 10000, EnvVars: e.EnvVars("leases"), Usage: "leases to keep alive"},
			&cli.IntFlag{Name: "batch", Value: 1000, EnvVars: e.EnvVars("batch"), Usage: "leases per keep-alive call (max 4096)"},
			&cli.IntFlag{Name: "clients", Value: 4, EnvVars: e.EnvVars("clients"), Usage: "concurrent keep-alive callers"},
			&cli.BoolFlag{Name: "stream", EnvVars: e.EnvVars("stream"),
				Usage: "send keep-alives over one long-lived stream per caller instead of one request per batch"},
		),
		Action: func(c *cli.Context) error {
			nl, batch, nc := c.Int("leases"), c.Int("batch"), c.Int("clients")
			if nl <= 0 || batch <= 0 || batch > 4096 || nc <= 0 {
				return fmt.Errorf("need --leases > 0, 0 < --batch <= 4096 and --clients > 0")
			}
			cl, err := e.NewClient(c)
			if err != nil {
				return err
			}
			ctx := c.Context
			// Grant in parallel.
			ids := make([]int64, nl)
			var next atomic.Int64
			var gwg sync.WaitGroup
			gper := make([]workerResult, 16)
			gstart := time.Now()
			for w := range gper {
				gwg.Add(1)
				go func() {
					defer gwg.Done()
					for i := int(next.Add(1) - 1); i < nl && ctx.Err() == nil; i = int(next.Add(1) - 1) {
						t0 := time.Now()
						l, err := cl.Grant(ctx, 60*time.Second)
						if err != nil {
							gper[w].errors++
							if gper[w].firstErr == nil {
								gper[w].firstErr = err
							}
							continue
						}
						ids[i] = l.ID
						gper[w].latencies = append(gper[w].latencies, time.Since(t0))
					}
				}()
			}
			gwg.Wait()
			grant := collect("grant", gper, time.Since(gstart))
			defer func() {
				// Leases left behind expire after 60s on their own; revoke what we can quickly.
				rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				for _, id := range ids {
					if id != 0 && rctx.Err() == nil {
						_ = cl.Revoke(rctx, id)
					}
				}
			}()
			per := make([]workerResult, nc)
			var kept atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			deadline := start.Add(c.Duration("duration"))
			for w := range nc {
				keepAlive := func(ids []int64) ([]int64, error) { return cl.KeepAliveMany(ctx, ids) }
				if c.Bool("stream") {
					ks, err := cl.OpenKeepAliveStream(ctx)
					if err != nil {
						return e.Explain("bench lease: open keep-alive stream", err)
					}
					defer ks.Close()
					keepAlive = ks.KeepAlive
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w * batch; ctx.Err() == nil && time.Now().Before(deadline); i += nc * batch {
						lo := i % nl
						hi := min(lo+batch, nl)
						t0 := time.Now()
						_, err := keepAlive(ids[lo:hi])
						if err != nil {
							per[w].errors++
							if per[w].firstErr == nil {
								per[w].firstErr = err
							}
							continue
						}
						kept.Add(int64(hi - lo))
						per[w].latencies = append(per[w].latencies, time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			ka := collect(fmt.Sprintf("keepalive(batch %d)", batch), per, elapsed)
			if err := report(c, grant, ka); err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "lease keep-alives/s: %.0f (%d leases)\n", float64(kept.Load())/elapsed.Seconds(), nl)
			return err
		},
	}
}

func (e Env) watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "fan-out: --watchers watches on one prefix, --events puts; report delivery latency and events/s",
		Flags: e.coordFlags(
			&cli.IntFlag{Name: "watchers", Value: 1000, EnvVars: e.EnvVars("watchers"), Usage: "concurrent watches"},
			&cli.IntFlag{Name: "events", Value: 200, EnvVars: e.EnvVars("events"), Usage: "puts to deliver"},
			&cli.StringFlag{Name: "key-prefix", Value: "bench-watch/", EnvVars: e.EnvVars("key-prefix"), Usage: "watched prefix"},
		),
		Action: func(c *cli.Context) error {
			nw, ne := c.Int("watchers"), c.Int("events")
			if nw <= 0 || ne <= 0 {
				return fmt.Errorf("--watchers and --events must be positive")
			}
			cl, err := e.NewClient(c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("duration")+time.Minute)
			defer cancel()
			prefix := c.String("key-prefix")
			_, rev, err := cl.List(ctx, prefix+"none/")
			if err != nil {
				return e.Explain("bench watch", err)
			}
			// Each watcher has its own connection pool so the fan-out is real.
			sent := make([]atomic.Int64, ne) // unix nanos of each put's start, by index
			per := make([]workerResult, nw)
			var ready, done sync.WaitGroup
			var delivered atomic.Int64
			for w := range nw {
				wc, err := e.NewClient(c)
				if err != nil {
					return err
				}
				wt := wc.Watch(ctx, prefix, rev+1, client.WithProgress(time.Second))
				ready.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					first := true
					got := 0
					for ev := range wt.Events() {
						if first {
							first = false
							ready.Done()
						}
						if ev.Type != client.EventPut {
							continue
						}
						var i int
						if _, err := fmt.Sscanf(ev.Key[len(prefix):], "%d", &i); err == nil && i < ne {
							if t0 := sent[i].Load(); t0 != 0 {
								per[w].latencies = append(per[w].latencies, time.Duration(time.Now().UnixNano()-t0))
							}
						}
						delivered.Add(1)
						if got++; got == ne {
							return
						}
					}
					if first {
						ready.Done()
					}
					per[w].errors++
					per[w].firstErr = wt.Err()
				}()
			}
			ready.Wait() // every watch is established (first progress event)
			start := time.Now()
			for i := range ne {
				sent[i].Store(time.Now().UnixNano())
				if _, err := cl.Put(ctx, fmt.Sprintf("%s%08d", prefix, i), []byte("v")); err != nil {
					return e.Explain("bench watch: put", err)
				}
			}
			done.Wait()
			elapsed := time.Since(start)
			r := collect(fmt.Sprintf("watch delivery (%d watchers)", nw), per, elapsed)
			if err := report(c, r); err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "events delivered/s: %.0f (%d events x %d watchers in %s)\n",
				float64(delivered.Load())/elapsed.Seconds(), ne, nw, elapsed.Round(time.Millisecond))
			return err
		},
	}
}
