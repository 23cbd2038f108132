package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/cli/bench"
)

// benchCommand wires the bench package's subcommands in with the flags, client and error hints every command uses.
func benchCommand() *cli.Command {
	subs := bench.Commands(bench.Env{
		EnvVars:          envVars,
		ClientFlags:      clientFlags,
		NewClient:        newClient,
		Explain:          explain,
		WantArgs:         wantArgs,
		NewLogger:        newLogger,
		ParseControllers: parseControllerAddrs,
	})
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.Name
	}
	return &cli.Command{
		Name:        "bench",
		Usage:       "measure a running cluster",
		Action:      groupCommand("bench", names...),
		Subcommands: subs,
	}
}
