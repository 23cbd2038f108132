package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The load of compare restart: the keys, and the memory they cost.

// loadSystem fills run: RSS before, the load, a settle, RSS after.
func loadSystem(run *restartRun, cfg restartConfig, value []byte) error {
	sys := run.sys
	if err := checkHealthy(sys, cfg.healthyWithin); err != nil {
		return err
	}
	pids, err := nodePIDs(sys)
	if err != nil {
		return err
	}
	for i, p := range pids {
		run.Nodes = append(run.Nodes, nodeRSS{Endpoint: sys.endpoints()[i], PID: p, BeforeMiB: procRSSMiB(p)})
	}
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = sys.prepare(pctx, value)
	cancel()
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	put, closeLoad, err := sys.openLoad()
	if err != nil {
		return err
	}
	fmt.Printf("# %s: loading %s keys with %d writers\n", sys.name(), thousands(cfg.keys), cfg.writers)
	res, err := loadKeys(cfg.keys, cfg.writers, cfg.tries, cfg.putTimeout, func(ctx context.Context, w, i int) error {
		return put(ctx, w, i, value)
	}, func(done int, elapsed time.Duration) {
		fmt.Printf("# %s: %s of %s keys in %.0fs, %s/s; load %s\n", sys.name(), thousands(done), thousands(cfg.keys),
			elapsed.Seconds(), thousands(int(float64(done)/elapsed.Seconds())), loadAvg())
	})
	closeLoad()
	run.Loaded, run.LoadRetries, run.LoadSeconds = res.done, res.retries, res.elapsed.Seconds()
	if res.elapsed > 0 {
		run.LoadPerS = float64(res.done) / res.elapsed.Seconds()
	}
	if err != nil {
		return err
	}
	time.Sleep(cfg.settle)
	if err := checkHealthy(sys, cfg.healthyWithin); err != nil {
		return fmt.Errorf("after the load: %w", err)
	}
	for i := range run.Nodes {
		// The same process as before the load, or the figure would compare two processes.
		if p, err := listenerPID(run.Nodes[i].Endpoint); err != nil || p != run.Nodes[i].PID {
			return fmt.Errorf("%s: pid %d before the load, now %d (%v)", run.Nodes[i].Endpoint, run.Nodes[i].PID, p, err)
		}
		run.Nodes[i].AfterMiB = procRSSMiB(run.Nodes[i].PID)
	}
	run.BytesPerKey = bytesPerKey(run.Nodes, cfg.keys)
	return nil
}

// bytesPerKey is (RSS after - RSS before) / keys, averaged over the nodes; 0 when a node's RSS could not be read.
func bytesPerKey(nodes []nodeRSS, keys int) float64 {
	if len(nodes) == 0 || keys <= 0 {
		return 0
	}
	var sum float64
	for _, n := range nodes {
		if n.BeforeMiB == 0 || n.AfterMiB == 0 {
			return 0
		}
		sum += (n.AfterMiB - n.BeforeMiB) * (1 << 20) / float64(keys)
	}
	return sum / float64(len(nodes))
}

type loadResult struct {
	done, retries int
	elapsed       time.Duration
}

// loadKeys writes keys 0..n-1 with writers goroutines, writer w the keys w, w+writers, ...; each key is tried at
// most tries times, each try under timeout. It stops at the first key that failed every try. progress is called
// every 30 s (a million keys take minutes) with the keys written so far.
func loadKeys(n, writers, tries int, timeout time.Duration, put func(ctx context.Context, w, i int) error,
	progress func(done int, elapsed time.Duration)) (loadResult, error) {
	var (
		done, retries atomic.Int64
		stop          atomic.Bool
		errMu         sync.Mutex
		firstErr      error
		wg            sync.WaitGroup
	)
	start := time.Now()
	finished := make(chan struct{})
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-finished:
				return
			case <-tick.C:
				progress(int(done.Load()), time.Since(start))
			}
		}
	}()
	for w := range min(writers, n) {
		wg.Go(func() {
			for i := w; i < n && !stop.Load(); i += writers {
				var err error
				for try := range tries {
					if try > 0 {
						retries.Add(1)
						// A refusal that comes back at once must not spin a core of this shared 2-core machine.
						time.Sleep(100 * time.Millisecond)
					}
					ctx, cancel := context.WithTimeout(context.Background(), timeout)
					err = put(ctx, w, i)
					cancel()
					if err == nil {
						break
					}
				}
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("key %d failed %d tries: %w", i, tries, err)
					}
					errMu.Unlock()
					stop.Store(true)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(finished)
	return loadResult{done: int(done.Load()), retries: int(retries.Load()), elapsed: time.Since(start)}, firstErr
}
