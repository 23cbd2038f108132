package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// outputFlag is -o/--output of the list and show commands. def is the command's format when -o is not given:
// what it printed before the flag existed, so scripts that parse it keep working.
func outputFlag(def string) cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: def, EnvVars: envVars("output"),
		Usage: "output format: table, or json (the API's answer shape)"}
}

// jsonOutput reports whether the command should print JSON: -o json, or the older --json of the job and alloc
// commands.
func jsonOutput(c *cli.Context) (bool, error) {
	if c.Bool("json") {
		return true, nil
	}
	switch f := c.String("output"); f {
	case "json":
		return true, nil
	case "table":
		return false, nil
	default:
		return false, fmt.Errorf("bad -o %q: use table or json", f)
	}
}
