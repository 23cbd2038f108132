package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

func allocCommand() *cli.Command {
	return &cli.Command{
		Name:  "alloc",
		Usage: "list and inspect allocations (job instances placed on workers), read their logs, restart them",
		Description: "   corral alloc list --job web\n   corral alloc status ID\n" +
			"   corral alloc logs --follow ID\n   corral alloc restart ID\n" +
			"ID may be any unique prefix of an allocation id.",
		Subcommands: []*cli.Command{allocListCommand(), allocStatusCommand(), allocLogsCommand(), allocRestartCommand()},
		Action:      groupCommand("alloc", "list", "status", "logs", "restart"),
	}
}

func allocNotFound(c *cli.Context, id string) error {
	return fmt.Errorf("allocation %s not found; list them with '%s' or '%s'", printable(id, 128),
		hint(c, "alloc list"), hint(c, "job status", "JOB"))
}

func allocListCommand() *cli.Command {
	return &cli.Command{
		Name:    "list",
		Aliases: []string{"ls"},
		Usage:   "list allocations, optionally only those of a job, a worker or in a state",
		Flags: append(append(clientFlags(), outputFlags()...),
			&cli.StringFlag{Name: "job", EnvVars: envVars("job"), Usage: "only this job's allocations"},
			&cli.StringFlag{Name: "worker", EnvVars: envVars("worker"), Usage: "only allocations placed on this worker"},
			&cli.StringFlag{Name: "state", EnvVars: envVars("state"),
				Usage: "only allocations in this state: pending, starting, running, exited, failed, lost or stopped"}),
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
			allocs, err := cl.FilterAllocations(c.Context, client.AllocFilter{Job: c.String("job"), Worker: c.String("worker"), State: c.String("state")})
			if err != nil {
				return explain("list allocations", err)
			}
			if asJSON {
				if allocs == nil {
					allocs = []client.Allocation{}
				}
				return printJSON(c.App.Writer, map[string]any{"allocations": allocs})
			}
			return printAllocs(c.App.Writer, allocs, time.Now())
		},
	}
}

func printAllocs(w io.Writer, allocs []client.Allocation, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tJOB\tVERSION\tWORKER\tEPOCH\tSTATE\tDESIRED\tEXIT\tRESTARTS\tAGE")
	for _, a := range allocs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%d\t%s\n", printable(a.ID, 64), printable(a.Job, 64), a.JobVersion,
			printable(a.Worker, 64), a.Epoch, a.State, a.Desired, exitCode(a.ExitCode), a.Restarts, formatShortAge(a.CreatedAt, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(allocs) == 0 {
		_, err := fmt.Fprintln(w, "(no allocations)")
		return err
	}
	return nil
}

func allocStatusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show an allocation's job, worker, state, exit code and state history",
		ArgsUsage: "ID",
		Flags:     append(clientFlags(), outputFlags()...),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			id := c.Args().First()
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			a, err := cl.Allocation(c.Context, id)
			if errors.Is(err, client.ErrAllocNotFound) {
				if id, err = expandAllocID(c, cl, id); err != nil {
					return err
				}
				a, err = cl.Allocation(c.Context, id)
			}
			if errors.Is(err, client.ErrAllocNotFound) {
				return allocNotFound(c, id)
			}
			if err != nil {
				return explain("allocation status", err)
			}
			if asJSON {
				return printJSON(c.App.Writer, map[string]any{"allocation": a})
			}
			return printAllocStatus(c.App.Writer, a, time.Now())
		},
	}
}

func printAllocStatus(w io.Writer, a client.Allocation, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", printable(a.ID, 128))
	fmt.Fprintf(tw, "job:\t%s (version %d)\n", printable(a.Job, 128), a.JobVersion)
	fmt.Fprintf(tw, "worker:\t%s (epoch %d)\n", printable(a.Worker, 128), a.Epoch)
	fmt.Fprintf(tw, "state:\t%s (desired %s)\n", a.State, a.Desired)
	fmt.Fprintf(tw, "exit code:\t%s\n", exitCode(a.ExitCode))
	fmt.Fprintf(tw, "restarts:\t%d\n", a.Restarts)
	if a.Message != "" {
		fmt.Fprintf(tw, "message:\t%s\n", printable(a.Message, 300))
	}
	fmt.Fprintf(tw, "created:\t%s\n", formatWhen(a.CreatedAt, now))
	fmt.Fprintf(tw, "started:\t%s\n", formatWhen(a.StartedAt, now))
	fmt.Fprintf(tw, "ended:\t%s\n", formatWhen(a.EndedAt, now))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nHistory:")
	if len(a.History) == 0 {
		_, err := fmt.Fprintln(w, "  (none)")
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range a.History {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", formatWhen(e.At, now), e.State, printable(e.Message, 200))
	}
	return tw.Flush()
}

func allocLogsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print an allocation's output (stdout, or stderr with --stderr); --follow streams until it ends or Ctrl-C",
		ArgsUsage: "ID",
		Description: "The log is read from the allocation's worker, through any controller.\n" +
			"   corral alloc logs --tail 20 --follow ID",
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, EnvVars: envVars("follow"),
				Usage: "keep printing new output until the allocation ends (Ctrl-C to stop)"},
			&cli.BoolFlag{Name: "stderr", EnvVars: envVars("stderr"), Usage: "print the task's standard error instead of its standard output"},
			&cli.IntFlag{Name: "tail", Value: -1, EnvVars: envVars("tail"),
				Usage: "start N lines before the end (default: the whole log)", DefaultText: "all"}),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			id := c.Args().First()
			tail := c.Int("tail")
			if c.IsSet("tail") && (tail < 0 || tail > 100000) {
				return fmt.Errorf("--tail must be a number of lines between 0 and 100000, got %d", tail)
			}
			stream := "stdout"
			if c.Bool("stderr") {
				stream = "stderr"
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			r, err := cl.AllocLogs(ctx, id, stream, c.Bool("follow"), tail)
			if errors.Is(err, client.ErrAllocNotFound) {
				if id, err = expandAllocID(c, cl, id); err != nil {
					return err
				}
				r, err = cl.AllocLogs(ctx, id, stream, c.Bool("follow"), tail)
			}
			switch {
			case errors.Is(err, client.ErrAllocNotFound):
				return allocNotFound(c, id)
			case errors.Is(err, client.ErrLogUnavailable):
				return fmt.Errorf("logs of allocation %s are unavailable: %w (its worker may be down or gone; see '%s')",
					printable(id, 128), err, hint(c, "alloc status", printable(id, 128)))
			case err != nil && ctx.Err() != nil:
				return nil // interrupted
			case err != nil:
				return explain("read logs", err)
			}
			defer r.Close()
			if _, err := io.Copy(c.App.Writer, r); err != nil && ctx.Err() == nil {
				return fmt.Errorf("log of allocation %s broke off: %w (the controller or worker went away; run the command again)",
					printable(id, 128), err)
			}
			return nil
		},
	}
}

func allocRestartCommand() *cli.Command {
	return &cli.Command{
		Name:      "restart",
		Usage:     "restart a running allocation's task in place, on the same worker",
		ArgsUsage: "ID",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			id := c.Args().First()
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			a, err := cl.RestartAlloc(c.Context, id)
			if errors.Is(err, client.ErrAllocNotFound) {
				if id, err = expandAllocID(c, cl, id); err != nil {
					return err
				}
				a, err = cl.RestartAlloc(c.Context, id)
			}
			switch {
			case errors.Is(err, client.ErrAllocNotFound):
				return allocNotFound(c, id)
			case errors.Is(err, client.ErrNotRunning):
				var apiErr *client.Error
				msg := "it is not running"
				if errors.As(err, &apiErr) && apiErr.Message != "" {
					msg = apiErr.Message
				}
				return fmt.Errorf("cannot restart allocation %s: %s (only a running allocation restarts; to run a stopped job again use '%s')",
					printable(id, 128), msg, hint(c, "job run", "FILE"))
			case err != nil:
				return explainChange("restart allocation", err, "check with '"+hint(c, "alloc status", printable(id, 128))+"' before restarting again")
			}
			_, err = fmt.Fprintf(c.App.Writer, "allocation %s restart requested on worker %s; watch it with '%s'\n",
				a.ID, a.Worker, hint(c, "alloc status", a.ID))
			return err
		},
	}
}

// expandAllocID is called when id names no allocation: it returns the id of the one allocation whose id starts
// with id, so that users can type a short unique prefix as with git commits, or an error that lists the
// candidates when several match, or allocNotFound when none does.
func expandAllocID(c *cli.Context, cl *client.Client, id string) (string, error) {
	all, err := cl.FilterAllocations(c.Context, client.AllocFilter{})
	if err != nil {
		return "", explain("list allocations to expand the prefix "+printable(id, 64), err)
	}
	var matches []client.Allocation
	for _, a := range all {
		if strings.HasPrefix(a.ID, id) {
			matches = append(matches, a)
		}
	}
	switch len(matches) {
	case 0:
		return "", allocNotFound(c, id)
	case 1:
		return matches[0].ID, nil
	}
	const show = 10
	var lines []string
	for i, a := range matches {
		if i == show {
			lines = append(lines, fmt.Sprintf("  ... and %d more", len(matches)-show))
			break
		}
		lines = append(lines, fmt.Sprintf("  %s (job %s, %s)", printable(a.ID, 64), printable(a.Job, 64), a.State))
	}
	return "", fmt.Errorf("allocation id prefix %s is ambiguous: %d allocations start with it; give more of the id:\n%s",
		printable(id, 64), len(matches), strings.Join(lines, "\n"))
}
