package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
)

// App returns corral's command-line application. Each call builds a fresh App, so tests can run several.
func App() *cli.App {
	app := &cli.App{
		Name:  "corral",
		Usage: "a cluster's coordination service and workload runner in one binary",
		Description: "Start a throwaway one-node cluster with `corral dev`, then use `corral kv` and `corral status`\n" +
			"against it. Every flag can also be set with an environment variable CORRAL_<FLAG_NAME>,\n" +
			"e.g. --endpoints is CORRAL_ENDPOINTS, or in a YAML file given with --config. Flags go before\n" +
			"positional arguments.",
		Commands: []*cli.Command{
			runCommand(),
			devCommand(),
			kvCommand(),
			statusCommand(),
			certsCommand(),
			tokenCommand(), // token.go
			aclCommand(),   // acl.go
			benchCommand(),
			controllerCommand(),
			snapshotCommand(),
			superviseCommand(),
			lockCommand(),   // lock.go
			electCommand(),  // lock.go
			leaseCommand(),  // coord.go
			watchCommand(),  // coord.go
			workerCommand(), // worker.go
			jobCommand(),    // job.go
			allocCommand(),  // alloc.go
			serviceCommand(),
			zkCommand(),         // zk.go
			versionCommand(),    // version.go
			completionCommand(), // version.go
		},
		Flags: []cli.Flag{versionFlag(), configFlag()},
		// completionCommand's scripts ask the binary for candidates (--generate-bash-completion).
		EnableBashCompletion: true,
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				printVersion(c.App.Writer)
				return nil
			}
			if c.Args().Present() {
				return fmt.Errorf("unknown command %q; run 'corral --help' to list the commands", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		// urfave/cli would call os.Exit itself for errors that carry an exit code; main owns the exit code.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	useConfigFile(app) // config.go
	return app
}

// envVars returns the environment variable that backs flag name: "data-dir" -> CORRAL_DATA_DIR.
func envVars(name string) []string {
	return []string{"CORRAL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
}

// groupCommand returns the Action of a command that only groups subcommands (kv, certs, bench): without this,
// urfave/cli prints help and exits 0 for a missing or misspelt subcommand.
func groupCommand(name string, subs ...string) cli.ActionFunc {
	return func(c *cli.Context) error {
		list := strings.Join(subs, ", ")
		if c.Args().Present() {
			return fmt.Errorf("unknown command 'corral %s %s'; use one of: %s (see 'corral %s --help')",
				name, c.Args().First(), list, name)
		}
		_ = cli.ShowSubcommandHelp(c)
		return fmt.Errorf("missing command after 'corral %s'; use one of: %s", name, list)
	}
}

// wantArgs checks the number of positional arguments and, if it is wrong, says what the command expects.
func wantArgs(c *cli.Context, n int) error {
	if c.NArg() == n {
		return nil
	}
	name := c.Command.HelpName
	if n == 0 {
		return fmt.Errorf("'%s' takes no arguments, got %q; see '%s --help'", name, c.Args().Slice(), name)
	}
	return fmt.Errorf("'%s' takes %d argument(s), got %d; usage: %s [flags] %s (flags go before arguments)",
		name, n, c.NArg(), name, c.Command.ArgsUsage)
}

// logFlags are shared by the commands that run a node.
func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: envVars("log-level"),
			Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: envVars("log-format"),
			Usage: "text or json"},
	}
}

// newLogger builds the slog logger selected by --log-level and --log-format, writing to w (stderr).
func newLogger(c *cli.Context, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("bad --log-level %q: use debug, info, warn or error", c.String("log-level"))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch f := c.String("log-format"); f {
	case "text":
		return slog.New(uniqueKeys{inner: slog.NewTextHandler(w, opts)}), nil
	case "json":
		return slog.New(uniqueKeys{inner: slog.NewJSONHandler(w, opts)}), nil
	default:
		return nil, fmt.Errorf("bad --log-format %q: use text or json", f)
	}
}

// splitList splits a comma-separated flag value, dropping empty items and surrounding spaces.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
