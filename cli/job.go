package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
)

func jobCommand() *cli.Command {
	return &cli.Command{
		Name:  "job",
		Usage: "submit, list, inspect and stop jobs",
		Description: "A job spec is JSON or YAML, e.g. web.yaml:\n" +
			"     name: web\n     type: service            # or batch: runs to completion\n     count: 2\n" +
			"     task: {command: /usr/bin/python3, args: [-m, http.server], resources: {cpu_millis: 100, memory_mb: 64}}\n" +
			"     constraints: [{label: zone, operator: \"=\", value: a}]\n" +
			"     restart: {attempts: 3, delay: 5s}\n\n" +
			"   corral job run web.yaml\n   corral job list\n   corral job status web\n   corral job stop web",
		Subcommands: []*cli.Command{jobRunCommand(), jobListCommand(), jobStatusCommand(), jobStopCommand()},
		Action:      groupCommand("job", "run", "list", "status", "stop"),
	}
}

// jsonFlag switches a list or status command from a table to the API's JSON answer; it predates -o and stays
// for scripts that use it. Commands that take it take -o (outputFlags) too.
func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", EnvVars: envVars("json"),
		Usage: "print JSON (the API's answer shape) instead of a table; same as -o json"}
}

// outputFlags are the format flags of the job and alloc list and show commands: -o, and the older --json.
func outputFlags() []cli.Flag { return []cli.Flag{outputFlag("table"), jsonFlag()} }

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// explainChange is explain for writes that are safe to repeat: a timeout leaves their outcome unknown, and
// check says how to find out.
func explainChange(op string, err error, check string) error {
	if errors.Is(err, client.ErrTimeout) {
		return fmt.Errorf("%s: %w (the outcome is unknown: %s)", op, err, check)
	}
	return explain(op, err)
}

func jobNotFound(c *cli.Context, name string) error {
	return fmt.Errorf("job %s not found; list the jobs with '%s'", printable(name, 128), hint(c, "job list"))
}

// readSpec reads a job spec from path, or from stdin for "-".
func readSpec(stdin io.Reader, path string) ([]byte, error) {
	var r io.Reader = stdin
	what := "standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read job spec: %w", err)
		}
		defer f.Close()
		r, what = f, path
	}
	b, err := io.ReadAll(io.LimitReader(r, metadata.MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read job spec from %s: %w", what, err)
	}
	if len(b) > metadata.MaxSpecBytes {
		return nil, fmt.Errorf("job spec %s is larger than the %d KiB limit", what, metadata.MaxSpecBytes>>10)
	}
	return b, nil
}

func jobRunCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "submit the job spec in FILE (JSON or YAML; - reads standard input), or update the job of that name",
		ArgsUsage: "FILE",
		Description: "Submitting the spec a job already runs changes nothing (\"unchanged\"). A changed spec becomes\n" +
			"the job's next version and replaces its allocations. Invalid fields are listed one per line.",
		Flags: clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			path := c.Args().First()
			spec, err := readSpec(c.App.Reader, path)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			j, changed, err := cl.SubmitJob(c.Context, spec)
			var se *client.SpecError
			if errors.As(err, &se) && len(se.Fields) > 0 {
				for _, f := range se.Fields {
					fmt.Fprintf(c.App.ErrWriter, "%s: %s\n", f.Field, f.Problem)
				}
				if path == "-" {
					return fmt.Errorf("the job spec on standard input is invalid (%d problem(s) listed above); fix it and submit it again",
						len(se.Fields))
				}
				return fmt.Errorf("job spec %s is invalid (%d problem(s) listed above); fix it and run '%s' again",
					path, len(se.Fields), hint(c, "job run", path))
			}
			if err != nil {
				return explainChange("submit job", err,
					"check with '"+hint(c, "job list")+"', or run the same spec again: an unchanged spec changes nothing")
			}
			verb := "submitted"
			if !changed {
				verb = "unchanged"
			}
			_, err = fmt.Fprintf(c.App.Writer, "job %s version %d %s\n", j.Name, j.Version, verb)
			return err
		},
	}
}

func jobListCommand() *cli.Command {
	return &cli.Command{
		Name:    "list",
		Aliases: []string{"ls"},
		Usage:   "list the jobs with their status and allocation counts",
		Description: "RUNNING counts running allocations (all versions); PENDING counts allocations not running yet\n" +
			"(pending or starting) plus instances that could not be placed (REASON says why).",
		Flags: append(clientFlags(), outputFlags()...),
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
			jobs, err := cl.Jobs(c.Context)
			if err != nil {
				return explain("list jobs", err)
			}
			sort.Slice(jobs, func(i, k int) bool { return jobs[i].Name < jobs[k].Name })
			if asJSON {
				if jobs == nil {
					jobs = []client.Job{}
				}
				return printJSON(c.App.Writer, map[string]any{"jobs": jobs})
			}
			return printJobs(c.App.Writer, jobs)
		},
	}
}

func printJobs(w io.Writer, jobs []client.Job) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tSTATUS\tVERSION\tCOUNT\tRUNNING\tPENDING\tREASON")
	for _, j := range jobs {
		pending := j.Allocations["pending"] + j.Allocations["starting"] + j.Unplaced
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", printable(j.Name, 64), j.Type, j.Status, j.Version, j.Count,
			j.Allocations["running"], pending, orDash(printable(j.Reason, 100)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(w, "(no jobs; submit one with 'corral job run FILE')")
		return err
	}
	return nil
}

func jobStatusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show a job's spec, status, recent events and allocations",
		ArgsUsage: "NAME",
		Flags:     append(clientFlags(), outputFlags()...),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			name := c.Args().First()
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			j, allocs, err := cl.Job(c.Context, name)
			if errors.Is(err, client.ErrJobNotFound) {
				return jobNotFound(c, name)
			}
			if err != nil {
				return explain("job status", err)
			}
			if asJSON {
				if allocs == nil {
					allocs = []client.Allocation{}
				}
				return printJSON(c.App.Writer, map[string]any{"job": j, "allocations": allocs})
			}
			return printJobStatus(c.App.Writer, j, allocs, time.Now())
		},
	}
}

// maxEvents is how many of a job's recent events `job status` shows.
const maxEvents = 10

func printJobStatus(w io.Writer, j client.Job, allocs []client.Allocation, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\n", printable(j.Name, 128))
	fmt.Fprintf(tw, "type:\t%s\n", j.Type)
	fmt.Fprintf(tw, "status:\t%s\n", j.Status)
	fmt.Fprintf(tw, "version:\t%d, submitted %s\n", j.Version, formatWhen(j.SubmittedAt, now))
	fmt.Fprintf(tw, "count:\t%d (%s)\n", j.Count, formatCounts(j.Allocations))
	var spec specView
	if len(j.Spec) > 0 && json.Unmarshal(j.Spec, &spec) == nil {
		printSpecSummary(tw, &spec)
	}
	if j.Unplaced > 0 {
		fmt.Fprintf(tw, "unplaced:\t%d\n", j.Unplaced)
	}
	if j.Reason != "" {
		fmt.Fprintf(tw, "reason:\t%s\n", printable(j.Reason, 200))
	}
	if j.EvaluationPending {
		fmt.Fprintf(tw, "scheduler:\tpending (the latest change has not been acted on yet)\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nRecent events:")
	events := j.Events
	if len(events) > maxEvents {
		fmt.Fprintf(w, "  (%d earlier not shown)\n", len(events)-maxEvents)
		events = events[len(events)-maxEvents:]
	}
	if len(events) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range events {
		fmt.Fprintf(tw, "  %s\t%s\n", formatWhen(e.At, now), printable(e.Message, 200))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nAllocations:")
	if len(allocs) == 0 {
		_, err := fmt.Fprintln(w, "  (none)")
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKER\tEPOCH\tSTATE\tDESIRED\tEXIT\tRESTARTS\tAGE")
	for _, a := range allocs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\n", printable(a.ID, 64), printable(a.Worker, 64), a.Epoch, a.State,
			a.Desired, exitCode(a.ExitCode), a.Restarts, formatShortAge(a.CreatedAt, now))
	}
	return tw.Flush()
}

// printSpecSummary writes the task, resources, placement and restart policy of a spec.
func printSpecSummary(tw io.Writer, s *specView) {
	argv := append([]string{s.Task.Command}, s.Task.Args...)
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			argv[i] = strconv.Quote(a)
		}
	}
	fmt.Fprintf(tw, "task:\t%s\n", printable(strings.Join(argv, " "), 200))
	if s.Task.Workdir != "" {
		fmt.Fprintf(tw, "workdir:\t%s\n", printable(s.Task.Workdir, 200))
	}
	if len(s.Task.Env) > 0 {
		keys := make([]string, 0, len(s.Task.Env))
		for k := range s.Task.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(tw, "env:\t%s\n", printable(strings.Join(keys, ", "), 200))
	}
	fmt.Fprintf(tw, "resources:\tcpu %dm, memory %d MB\n", s.Task.Resources.CPUMillis, s.Task.Resources.MemoryMB)
	placement := orDash(s.Placement)
	if len(s.Constraints) > 0 {
		cs := make([]string, len(s.Constraints))
		for i, c := range s.Constraints {
			switch {
			case c.Operator == "exists":
				cs[i] = c.Label + " exists"
			case len(c.Values) > 0:
				cs[i] = fmt.Sprintf("%s %s (%s)", c.Label, c.Operator, strings.Join(c.Values, ","))
			default:
				cs[i] = fmt.Sprintf("%s %s %s", c.Label, c.Operator, c.Value)
			}
		}
		placement += "; constraints: " + printable(strings.Join(cs, ", "), 200)
	}
	if s.Singleton {
		placement += "; singleton"
	}
	if s.Reschedule != nil && !*s.Reschedule {
		placement += "; no rescheduling"
	}
	fmt.Fprintf(tw, "placement:\t%s\n", placement)
	r := s.Restart
	restart := "none (a failed task is not restarted in place)"
	if r.Attempts > 0 {
		restart = fmt.Sprintf("%d attempt(s), delay %s", r.Attempts, time.Duration(r.Delay))
		if r.Backoff > 1 {
			restart += fmt.Sprintf(" x%g per attempt", r.Backoff)
			if r.MaxDelay > 0 {
				restart += ", at most " + time.Duration(r.MaxDelay).String()
			}
		}
	}
	fmt.Fprintf(tw, "restart:\t%s\n", restart)
}

// formatCounts lists allocation counts by state, most interesting first.
func formatCounts(m map[string]int) string {
	order := []string{"running", "starting", "pending", "exited", "failed", "lost", "stopped"}
	var parts []string
	seen := map[string]bool{}
	for _, s := range order {
		if m[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[s], s))
		}
		seen[s] = true
	}
	var rest []string
	for s, n := range m {
		if !seen[s] && n > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", n, s))
		}
	}
	sort.Strings(rest)
	parts = append(parts, rest...)
	if len(parts) == 0 {
		return "no allocations"
	}
	return strings.Join(parts, ", ")
}

func exitCode(c *int) string {
	if c == nil {
		return "-"
	}
	return strconv.Itoa(*c)
}

// formatWhen prints a time in the local zone with how long ago it was.
func formatWhen(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST") + " (" + formatShortAge(t, now) + " ago)"
}

// formatShortAge is a compact age for tables: 45s, 12m, 5h3m, 9d.
func formatShortAge(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		h := int(d / time.Hour)
		if m := int(d%time.Hour) / int(time.Minute); m > 0 {
			return fmt.Sprintf("%dh%dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

func jobStopCommand() *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "stop every allocation of job NAME (it stays listed as stopped; 'corral job run' starts it again)",
		ArgsUsage: "NAME",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			name := c.Args().First()
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			j, err := cl.StopJob(c.Context, name)
			if errors.Is(err, client.ErrJobNotFound) {
				return jobNotFound(c, name)
			}
			if err != nil {
				return explainChange("stop job", err, "check with '"+hint(c, "job status", printable(name, 128))+"', or stop it again")
			}
			if j.Status == "stopped" {
				_, err = fmt.Fprintf(c.App.Writer, "job %s stopped\n", j.Name)
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "job %s stopping; follow it with '%s'\n", j.Name, hint(c, "job status", j.Name))
			return err
		},
	}
}
