package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles"
)

// workerRunFlags are `corral run` flags used by --role=worker and --role=combined.
func workerRunFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "labels", EnvVars: envVars("labels"),
			Usage: "worker labels as KEY=VALUE,..., e.g. zone=a,gpu=yes"},
		&cli.Int64Flag{Name: "cpu", EnvVars: envVars("cpu"),
			Usage: "worker CPU capacity in millicores (default: all CPUs of the machine)"},
		&cli.Int64Flag{Name: "memory", EnvVars: envVars("memory"),
			Usage: "worker memory capacity in MB (default: the machine's memory)"},
		&cli.IntFlag{Name: "max-allocs", Value: metadata.DefaultMaxAllocs, EnvVars: envVars("max-allocs"),
			Usage: "worker: the most allocations (not yet ended) the scheduler places on this worker"},
		&cli.DurationFlag{Name: "heartbeat-interval", Value: roles.DefaultHeartbeatInterval, EnvVars: envVars("heartbeat-interval"),
			Usage: "time between a worker's heartbeats"},
		&cli.StringFlag{Name: "worker-http-addr", EnvVars: envVars("worker-http-addr"),
			Usage: "combined role: HOST:PORT for the worker's /healthz, /readyz and /metrics (--http-addr is the API)"},
		&cli.DurationFlag{Name: "session-timeout", Value: roles.DefaultSessionTimeout, EnvVars: envVars("session-timeout"),
			Usage: "controller: how long a worker may be silent before the leader fences it"},
		&cli.DurationFlag{Name: "log-retention", Value: 24 * time.Hour, EnvVars: envVars("log-retention"),
			Usage: "worker: keep the logs of ended allocations this long (0: forever)"},
		&cli.StringFlag{Name: "task-user", Value: roles.DefaultTaskUser, EnvVars: envVars("task-user"),
			Usage: "worker running as root: the unprivileged user tasks run as when their job names none (a worker that is not root runs tasks as itself)"},
		&cli.StringFlag{Name: "allowed-task-users", EnvVars: envVars("allowed-task-users"),
			Usage: "worker running as root: comma list of the other users a job may name in task.user (default: none)"},
		&cli.StringFlag{Name: "allowed-commands", EnvVars: envVars("allowed-commands"),
			Usage: "worker: comma list of globs (path.Match) the path of a task's command must match, e.g. /usr/bin/*,/opt/app/bin/*; other commands fail the allocation (default: every command)"},
		&cli.StringFlag{Name: "join-token", EnvVars: envVars("join-token"),
			Usage: "worker: instead of --tls-dir, a join token ('corral token create') traded on first start for a certificate kept in --data-dir/tls; later starts use that and ignore the token"},
		&cli.StringFlag{Name: "ca-cert", EnvVars: envVars("ca-cert"),
			Usage: "worker with --join-token: the cluster's ca.pem (never ca-key.pem), which the controllers' certificates must chain to"},
	}
}

// workerConfig turns run's flags into a WorkerConfig. For the combined role the controller's flags provide the
// data dir, TLS dir and controllers, and the worker id is the controller's node id.
func workerConfig(c *cli.Context, combined bool) (roles.WorkerConfig, error) {
	var cfg roles.WorkerConfig
	if err := wantArgs(c, 0); err != nil {
		return cfg, err
	}
	cfg.ID = c.String("node-id")
	if cfg.ID != "" {
		if err := roles.ValidateWorkerID(cfg.ID); err != nil {
			return cfg, fmt.Errorf("bad --node-id: %w", err)
		}
	}
	cfg.DataDir = c.String("data-dir")
	if cfg.DataDir == "" {
		return cfg, errors.New("missing --data-dir: where this worker keeps its id, e.g. --data-dir data/worker1")
	}
	labels, err := roles.ParseLabels(c.String("labels"))
	if err != nil {
		return cfg, fmt.Errorf("bad --labels: %w", err)
	}
	if len(labels) > 0 {
		cfg.Labels = labels
	}
	cfg.CPUMillis, cfg.MemoryMB = c.Int64("cpu"), c.Int64("memory")
	if cfg.CPUMillis < 0 || cfg.MemoryMB < 0 {
		return cfg, errors.New("--cpu and --memory must not be negative (0 means the machine's)")
	}
	if cfg.MaxAllocs = c.Int("max-allocs"); cfg.MaxAllocs < 1 {
		return cfg, errors.New("--max-allocs must be at least 1, e.g. 100")
	}
	cfg.HeartbeatInterval = c.Duration("heartbeat-interval")
	if cfg.HeartbeatInterval <= 0 {
		return cfg, errors.New("--heartbeat-interval must be positive, e.g. 1s")
	}
	cfg.EnforceLimits = true
	if cfg.TaskUser = strings.TrimSpace(c.String("task-user")); cfg.TaskUser == "" {
		return cfg, errors.New("--task-user must name a user, e.g. nobody")
	}
	cfg.AllowedTaskUsers = splitList(c.String("allowed-task-users"))
	cfg.AllowedCommands = splitList(c.String("allowed-commands"))
	for _, g := range cfg.AllowedCommands {
		if !strings.HasPrefix(g, "/") {
			return cfg, fmt.Errorf("bad --allowed-commands: %q is not an absolute path glob (commands are matched by their full path, e.g. /usr/bin/*)", g)
		}
	}
	if err := roles.ValidateGlobs(cfg.AllowedCommands); err != nil {
		return cfg, fmt.Errorf("bad --allowed-commands: %w", err)
	}
	if cfg.LogRetention = c.Duration("log-retention"); cfg.LogRetention < 0 {
		return cfg, errors.New("--log-retention must not be negative (0 keeps logs forever)")
	}
	if cfg.Logger, err = newLogger(c, c.App.ErrWriter); err != nil {
		return cfg, err
	}
	if combined {
		cfg.HTTPAddr = c.String("worker-http-addr")
		return cfg, nil // the rest comes from the controller
	}
	cfg.HTTPAddr = c.String("http-addr")
	if cfg.Controllers, err = parseControllerAddrs(c.String("controllers")); err != nil {
		return cfg, err
	}
	cfg.TLSDir = c.String("tls-dir")
	cfg.JoinToken, cfg.CACert = c.String("join-token"), c.String("ca-cert")
	switch {
	case c.String("ca-dir") != "":
		return cfg, errors.New("--ca-dir is for controllers (it holds the CA key); a worker joins with --join-token and --ca-cert (the CA certificate only)")
	case cfg.JoinToken != "" && cfg.TLSDir != "":
		return cfg, errors.New("give --tls-dir or --join-token, not both: a worker that joins with a token keeps its certificate in --data-dir/tls")
	case cfg.JoinToken != "" && cfg.CACert == "":
		return cfg, errors.New("--join-token needs --ca-cert: the cluster's ca.pem (not ca-key.pem), to check the controllers with")
	case cfg.JoinToken == "" && cfg.CACert != "":
		return cfg, errors.New("--ca-cert goes with --join-token (with --tls-dir, the CA is the TLS dir's ca.pem)")
	case cfg.JoinToken == "" && cfg.TLSDir == "":
		return cfg, errors.New("missing --tls-dir: the controllers' CA with a node certificate issued for this worker: 'corral certs issue --ca-dir CA --role worker --id ID --out DIR' (or join with --join-token and --ca-cert: see 'corral token create')")
	}
	if cfg.JoinToken != "" {
		if _, _, err := metadata.ParseJoinToken(cfg.JoinToken); err != nil {
			return cfg, fmt.Errorf("bad --join-token: %w", err)
		}
	}
	return cfg, nil
}

// parseControllerAddrs accepts HOST:PORT,... and, so that one --controllers value serves every role,
// ID@HOST:PORT,... (the ids are ignored).
func parseControllerAddrs(s string) ([]string, error) {
	var out []string
	for _, part := range splitList(s) {
		if _, addr, ok := strings.Cut(part, "@"); ok {
			part = addr
		}
		if _, _, err := net.SplitHostPort(part); err != nil {
			return nil, fmt.Errorf("bad --controllers entry %q: want HOST:PORT (the controllers' cluster addresses): %v", part, err)
		}
		out = append(out, part)
	}
	if len(out) == 0 {
		return nil, errors.New("missing --controllers: the controllers' cluster addresses, e.g. --controllers 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003")
	}
	return out, nil
}

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:        "worker",
		Usage:       "inspect and drain the cluster's workers",
		Subcommands: []*cli.Command{workerListCommand(), workerDrainCommand()},
		Action:      groupCommand("worker", "list", "drain"),
	}
}

func workerDrainCommand() *cli.Command {
	return &cli.Command{
		Name:      "drain",
		Usage:     "stop placing allocations on worker ID and move its services elsewhere (--undo: take work again)",
		ArgsUsage: "ID",
		Description: "Batch allocations already running on the worker finish there. The drain survives the worker's\n" +
			"restarts until undone. Example: corral worker drain w-1; corral worker drain --undo w-1",
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "undo", EnvVars: envVars("undo"), Usage: "end the drain: the worker takes new allocations again"}),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			id := c.Args().First()
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			drain := !c.Bool("undo")
			d, err := cl.DrainWorker(c.Context, id, drain)
			if errors.Is(err, client.ErrWorkerNotFound) {
				return fmt.Errorf("worker %s not found; list the workers with '%s'", printable(id, 128), hint(c, "worker list"))
			}
			if err != nil {
				return explainChange("drain worker", err, "check with '"+hint(c, "worker list")+"', or run the command again")
			}
			name := printable(d.Worker, 128)
			switch {
			case drain && d.State == "draining":
				_, err = fmt.Fprintf(c.App.Writer, "worker %s is draining: it gets no new allocations and its services move "+
					"to other workers (undo with '%s')\n", name, hint(c, "worker drain --undo", name))
			case drain:
				_, err = fmt.Fprintf(c.App.Writer, "worker %s is %s; it will drain if it comes back (undo with '%s')\n",
					name, d.State, hint(c, "worker drain --undo", name))
			default:
				_, err = fmt.Fprintf(c.App.Writer, "worker %s is no longer draining (state %s)\n", name, d.State)
			}
			return err
		},
	}
}

func workerListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the workers with their state, epoch, last heartbeat, capacity and load",
		Description: "Liveness (suspect, load, heartbeat age) is known to the leader only; a follower asks the leader, or\n" +
			"says that it answered from replicated state. Example: corral worker list --state alive",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "state", EnvVars: envVars("state"),
				Usage: "only workers in this state: alive, suspect, fenced, draining or left"}, outputFlag("table")),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			list, err := cl.Workers(c.Context, c.String("state"))
			if err != nil {
				return explain("list workers", err)
			}
			if asJSON {
				if list.Workers == nil {
					list.Workers = []client.Worker{}
				}
				return printJSON(c.App.Writer, list)
			}
			return printWorkers(c.App.Writer, list)
		},
	}
}

// printWorkers writes one row per worker: ID, state, epoch, heartbeat age, CPU and memory as used/capacity, tasks,
// labels and addresses.
func printWorkers(w io.Writer, list *client.WorkerList) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tEPOCH\tLAST HEARTBEAT\tCPU (m)\tMEMORY (MB)\tTASKS\tLABELS\tADDRESSES")
	for _, wk := range list.Workers {
		age, cpu, mem, tasks := "-", fmt.Sprintf("-/%d", wk.Capacity.CPUMillis), fmt.Sprintf("-/%d", wk.Capacity.MemoryMB), "-"
		if wk.LastHeartbeatAgeMS != nil {
			age = formatAge(time.Duration(*wk.LastHeartbeatAgeMS) * time.Millisecond)
		}
		if wk.Load != nil {
			cpu = fmt.Sprintf("%d/%d", wk.Load.CPUMillis, wk.Capacity.CPUMillis)
			mem = fmt.Sprintf("%d/%d", wk.Load.MemoryMB, wk.Capacity.MemoryMB)
			tasks = strconv.FormatUint(wk.Load.RunningTasks, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(wk.ID, 64), wk.State, wk.Epoch, age, cpu, mem,
			tasks, orDash(formatLabels(wk.Labels)), orDash(strings.Join(wk.Addresses, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(list.Workers) == 0 {
		fmt.Fprintln(w, "(no workers)")
	}
	if list.Source != "leader" {
		_, err := fmt.Fprintln(w, "\n(answered from replicated state: liveness and load are known to the leader only)")
		return err
	}
	return nil
}

func formatAge(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(time.Millisecond).String() + " ago"
	}
	return d.Round(time.Second).String() + " ago"
}

func formatLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, printable(k+"="+l[k], 64))
	}
	return strings.Join(parts, ",")
}
