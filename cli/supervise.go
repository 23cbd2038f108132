package cli

import (
	"errors"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
)

// superviseCommand is started by a worker for every allocation; it is not
// meant to be run by hand (hidden from help).
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name:      "supervise",
		Hidden:    true,
		Usage:     "run one task under a worker's supervision (started by the worker)",
		ArgsUsage: "-- COMMAND [ARGS...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "stdout", EnvVars: envVars("stdout"), Required: true, Usage: "stdout log file"},
			&cli.StringFlag{Name: "stderr", EnvVars: envVars("stderr"), Required: true, Usage: "stderr log file"},
			&cli.StringFlag{Name: "workdir", EnvVars: envVars("workdir"), Usage: "task working directory"},
			&cli.Int64Flag{Name: "max-log-bytes", EnvVars: envVars("max-log-bytes"), Value: 10 << 20, Usage: "size cap of each log file"},
			&cli.IntFlag{Name: "keep-logs", EnvVars: envVars("keep-logs"), Value: 3, Usage: "rotated log files kept"},
			&cli.DurationFlag{Name: "refresh-timeout", EnvVars: envVars("refresh-timeout"), Value: 2 * time.Second,
				Usage: "kill the task when the worker sent no refresh for this long"},
			&cli.DurationFlag{Name: "kill-timeout", EnvVars: envVars("kill-timeout"), Value: 5 * time.Second, Usage: "SIGTERM to SIGKILL grace on stop"},
			&cli.DurationFlag{Name: "lost-grace", EnvVars: envVars("lost-grace"), Value: time.Second, Usage: "SIGTERM to SIGKILL grace when supervision is lost"},
			&cli.StringFlag{Name: "cgroup", EnvVars: envVars("cgroup"), Usage: "cgroup v2 directory to create for the task (limits enforced)"},
			&cli.Int64Flag{Name: "cpu-millis", EnvVars: envVars("cpu-millis"), Usage: "with --cgroup: CPU limit in millicores (0: none)"},
			&cli.Int64Flag{Name: "memory-mb", EnvVars: envVars("memory-mb"), Usage: "with --cgroup: memory limit in MB (0: none)"},
			// The worker always passes these (its environment is the job's).
			&cli.Int64Flag{Name: "uid", Value: -1, EnvVars: envVars("uid"), Usage: "run the task as this uid (-1: the supervisor's own user)"},
			&cli.Int64Flag{Name: "gid", Value: -1, EnvVars: envVars("gid"), Usage: "with --uid: the task's primary group id"},
			&cli.StringFlag{Name: "groups", EnvVars: envVars("groups"), Usage: "with --uid: the task's supplementary group ids, comma-separated"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return errors.New("supervise needs a command after --")
			}
			cred, err := roles.ParseTaskCredential(c.Int64("uid"), c.Int64("gid"), c.String("groups"))
			if err != nil {
				return err
			}
			code := roles.SuperviseMain(roles.SupervisorConfig{
				Command: c.Args().First(), Args: c.Args().Tail(), Env: os.Environ(), Workdir: c.String("workdir"),
				Stdout: c.String("stdout"), Stderr: c.String("stderr"),
				MaxLogBytes: c.Int64("max-log-bytes"), KeepLogs: c.Int("keep-logs"),
				RefreshTimeout: c.Duration("refresh-timeout"), KillTimeout: c.Duration("kill-timeout"),
				LostGrace: c.Duration("lost-grace"),
				Cgroup:    c.String("cgroup"), CPUMillis: c.Int64("cpu-millis"), MemoryMB: c.Int64("memory-mb"),
				Credential: cred,
			})
			if code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}
