package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
)

// TestWorkerConfig_TaskIsolation checks the task isolation flags of `corral run --role=worker`.
func TestWorkerConfig_TaskIsolation(t *testing.T) {
	parse := func(flags map[string]string) (roles.WorkerConfig, error) {
		var got roles.WorkerConfig
		app := App()
		app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
		for _, cmd := range app.Commands {
			if cmd.Name == "run" {
				cmd.Action = func(c *cli.Context) error {
					var err error
					got, err = workerConfig(c, false)
					return err
				}
			}
		}
		flags["role"] = "worker"
		return got, app.Run(append([]string{"corral"}, validRun(flags)...))
	}
	cases := []struct {
		name     string
		flags    map[string]string
		user     string
		users    []string
		commands []string
		err      string
	}{
		{"defaults", map[string]string{}, "nobody", nil, nil, ""},
		{"all set", map[string]string{"task-user": "svc", "allowed-task-users": "www-data, daemon",
			"allowed-commands": "/usr/bin/*,/opt/app/bin/run"}, "svc", []string{"www-data", "daemon"},
			[]string{"/usr/bin/*", "/opt/app/bin/run"}, ""},
		{"relative glob", map[string]string{"allowed-commands": "sleep"}, "", nil, nil, "not an absolute path glob"},
		{"bad glob", map[string]string{"allowed-commands": "/usr/bin/["}, "", nil, nil, "bad --allowed-commands"},
		{"blank task user", map[string]string{"task-user": " "}, "", nil, nil, "--task-user must name a user"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parse(c.flags)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.user, got.TaskUser)
			require.Equal(t, c.users, got.AllowedTaskUsers)
			require.Equal(t, c.commands, got.AllowedCommands)
		})
	}
}
