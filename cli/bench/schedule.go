package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

func (e Env) scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "place many allocations on simulated workers and report placements per second and time until all run",
		Description: "Starts --workers simulated workers (the real worker code, each with its own QUIC session, that\n" +
			"acknowledge allocations without running processes), submits --allocations allocations as jobs of\n" +
			"--per-job each, and measures from the first submission until the leader committed every placement\n" +
			"(corral_scheduler_placements_total) and until every allocation reported running. The jobs are\n" +
			"stopped at the end. Example, against scripts/cluster.sh start:\n" +
			"   corral bench schedule --endpoints http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083 \\\n" +
			"     --controllers 127.0.0.1:7081,127.0.0.1:7082,127.0.0.1:7083 --tls-dir /tmp/corral-cluster/tls \\\n" +
			"     --workers 1000 --allocations 100000\n" +
			"--tls-dir must hold a controller certificate (scripts/cluster.sh issues one there): the simulated\n" +
			"workers share it, and a worker certificate may speak only for the one worker it names.",
		Flags: append(e.ClientFlags(),
			&cli.StringFlag{Name: "controllers", EnvVars: e.EnvVars("controllers"), Usage: "the controllers' cluster (QUIC) addresses"},
			&cli.StringFlag{Name: "tls-dir", EnvVars: e.EnvVars("tls-dir"), Usage: "directory with the cluster CA and a node certificate"},
			&cli.IntFlag{Name: "workers", Value: 100, EnvVars: e.EnvVars("workers"), Usage: "simulated workers"},
			&cli.IntFlag{Name: "allocations", Value: 10000, EnvVars: e.EnvVars("allocations"), Usage: "allocations to place"},
			&cli.IntFlag{Name: "per-job", Value: 1000, EnvVars: e.EnvVars("per-job"), Usage: "allocations per job (count)"},
			&cli.DurationFlag{Name: "heartbeat-interval", Value: time.Second, EnvVars: e.EnvVars("heartbeat-interval"),
				Usage: "each worker's heartbeat interval"},
			&cli.DurationFlag{Name: "ramp", EnvVars: e.EnvVars("ramp"), Usage: "spread worker starts over this long (default 10ms per worker)"},
			&cli.DurationFlag{Name: "max-wait", Value: 10 * time.Minute, EnvVars: e.EnvVars("max-wait"),
				Usage: "give up when not everything runs after this long"},
			&cli.StringFlag{Name: "log-level", Value: "error", EnvVars: e.EnvVars("log-level"), Usage: "simulated workers' log level"},
			&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: e.EnvVars("log-format"), Usage: "text or json"},
		),
		Action: e.scheduleAction,
	}
}

type benchSchedule struct {
	workers, allocs, perJob int
	lead                    *benchLeader
	out                     io.Writer
	run                     *benchRun
	env                     Env
}

func (e Env) scheduleAction(c *cli.Context) error {
	if err := e.WantArgs(c, 0); err != nil {
		return err
	}
	b := benchSchedule{workers: c.Int("workers"), allocs: c.Int("allocations"), perJob: c.Int("per-job"), out: c.App.Writer,
		env: e}
	switch {
	case b.workers < 1 || b.workers > 100000:
		return fmt.Errorf("--workers must be between 1 and 100000, got %d", b.workers)
	case b.allocs < 1 || b.allocs > 1000000:
		return fmt.Errorf("--allocations must be between 1 and 1000000, got %d", b.allocs)
	case b.perJob < 1 || b.perJob > 100000:
		return fmt.Errorf("--per-job must be between 1 and 100000, got %d", b.perJob)
	}
	wcfg := benchWorkersConfig{tlsDir: c.String("tls-dir"), workers: b.workers, interval: c.Duration("heartbeat-interval"),
		ramp: c.Duration("ramp"), perSocket: 250, prefix: "sched-"}
	var err error
	if wcfg.controllers, err = e.ParseControllers(c.String("controllers")); err != nil {
		return err
	}
	if wcfg.tlsDir == "" {
		return errors.New("missing --tls-dir: the cluster CA and a controller certificate (e.g. /tmp/corral-cluster/tls from scripts/cluster.sh)")
	}
	if wcfg.ramp <= 0 {
		wcfg.ramp = max(time.Duration(b.workers)*10*time.Millisecond, time.Second)
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	if b.lead, err = e.findLeader(ctx, c); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "bench schedule: %d allocations in jobs of %d over %d simulated workers; leader %d (%s)\n",
		b.allocs, b.perJob, b.workers, b.lead.id, b.lead.locality())
	cleanup, err := b.startWorkers(ctx, c, wcfg)
	defer cleanup()
	if err != nil {
		return err
	}
	fencedBefore, termBefore := b.run.fenced.Load(), b.term()
	if err := b.measure(ctx, c.Duration("max-wait")); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "false fencings: %d; leader term %d -> %d\n", b.run.fenced.Load()-fencedBefore, termBefore, b.term())
	return nil
}

// startWorkers starts the simulated workers and waits until all are alive.
func (b *benchSchedule) startWorkers(ctx context.Context, c *cli.Context, cfg benchWorkersConfig) (func(), error) {
	bundle, err := transport.LoadTLSDir(cfg.tlsDir)
	if err != nil {
		return func() {}, fmt.Errorf("load TLS files: %w", err)
	}
	dir, err := os.MkdirTemp("", "corral-bench-schedule-")
	if err != nil {
		return func() {}, fmt.Errorf("create scratch dir: %w", err)
	}
	logger, err := b.env.NewLogger(c, c.App.ErrWriter)
	if err != nil {
		return func() {}, err
	}
	ctrls := cfg.controllers
	if b.lead.clusterAddr != "" {
		ctrls = append([]string{b.lead.clusterAddr}, without(cfg.controllers, b.lead.clusterAddr)...)
	}
	run := &benchRun{}
	b.run = run
	var sims []*simWorker
	var dialers []transport.StreamDialer
	cleanup := func() {
		closeSims(sims)
		for _, d := range dialers {
			_ = d.Close()
		}
		_ = os.RemoveAll(dir)
	}
	start := time.Now()
	for i := range cfg.workers {
		if ctx.Err() != nil {
			return cleanup, ctx.Err()
		}
		if i%cfg.perSocket == 0 {
			d, err := roles.NewWorkerDialer(bundle, logger, cfg.interval)
			if err != nil {
				return cleanup, err
			}
			dialers = append(dialers, d)
		}
		sim, err := startSimWorkerWith(run, cfg, fmt.Sprintf("%s%d", cfg.prefix, i), filepath.Join(dir, strconv.Itoa(i)),
			ctrls, dialers[len(dialers)-1], logger, true)
		if err != nil {
			return cleanup, err
		}
		sims = append(sims, sim)
		if wait := time.Until(start.Add(cfg.ramp * time.Duration(i+1) / time.Duration(cfg.workers))); wait > 0 {
			time.Sleep(wait)
		}
	}
	if !waitAllAlive(ctx, run, cfg.workers, cfg.ramp+30*time.Second) {
		return cleanup, fmt.Errorf("only %d of %d workers became alive", run.alive.Load(), cfg.workers)
	}
	fmt.Fprintf(b.out, "workers: %d alive after %s\n", cfg.workers, time.Since(start).Round(100*time.Millisecond))
	return cleanup, nil
}

// term is the cluster's raft term as the leader endpoint reports it.
func (b *benchSchedule) term() uint64 {
	st, err := b.lead.cl.Cluster(context.Background())
	if err != nil {
		return 0
	}
	return st.Term
}

// measure submits the jobs and polls the leader's metrics until every
// placement is committed and every allocation runs.
func (b *benchSchedule) measure(ctx context.Context, maxWait time.Duration) error {
	m0, err := b.lead.metrics()
	if err != nil {
		return err
	}
	base := m0["corral_scheduler_placements_total"]
	baseRunning := m0[`corral_scheduler_allocations{state="running"}`]
	jobs := (b.allocs + b.perJob - 1) / b.perJob
	names := make([]string, 0, jobs)
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	sem := make(chan struct{}, 16)
	for i := range jobs {
		count := min(b.perJob, b.allocs-i*b.perJob)
		name := fmt.Sprintf("bench-schedule-%d-%d", t0.Unix(), i)
		names = append(names, name)
		spec := fmt.Sprintf(`{"name":%q,"count":%d,"placement":"binpack","task":{"command":"/bin/true","resources":{"cpu_millis":10,"memory_mb":1}}}`, name, count)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := b.post(ctx, "POST", "/v1/jobs", spec); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	defer b.stopJobs(names)
	if err := <-errs; err != nil {
		return fmt.Errorf("submit jobs: %w", err)
	}
	submitted := time.Since(t0)
	var placedAt, runningAt time.Duration
	for placedAt == 0 || runningAt == 0 {
		if time.Since(t0) > maxWait || ctx.Err() != nil {
			return fmt.Errorf("gave up after %s: placed at %s, running at %s", time.Since(t0).Round(time.Millisecond), placedAt, runningAt)
		}
		time.Sleep(20 * time.Millisecond)
		m, err := b.lead.metrics()
		if err != nil {
			continue
		}
		if placedAt == 0 && m["corral_scheduler_placements_total"]-base >= float64(b.allocs) {
			placedAt = time.Since(t0)
		}
		if runningAt == 0 && m[`corral_scheduler_allocations{state="running"}`]-baseRunning >= float64(b.allocs) {
			runningAt = time.Since(t0)
		}
	}
	fmt.Fprintf(b.out, "submitted %d jobs in %s\n", jobs, submitted.Round(time.Millisecond))
	fmt.Fprintf(b.out, "placements committed: %d in %s = %.0f placements/s\n", b.allocs, placedAt.Round(time.Millisecond),
		float64(b.allocs)/placedAt.Seconds())
	fmt.Fprintf(b.out, "all running after:    %s (%.0f allocations/s from submission to running)\n",
		runningAt.Round(time.Millisecond), float64(b.allocs)/runningAt.Seconds())
	return nil
}

func (b *benchSchedule) post(ctx context.Context, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, b.lead.endpoint+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set(client.ClientHeader, "corral-bench") // the API refuses writes without it (browser safety)
	if b.lead.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.lead.token)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	return nil
}

func (b *benchSchedule) stopJobs(names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range names {
		_ = b.post(ctx, "DELETE", "/v1/jobs/"+n, "")
	}
}
