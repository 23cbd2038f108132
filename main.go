// Command corral is a cluster's coordination service and workload runner in one binary.
package main

import (
	"errors"
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/cli"
)

func main() {
	err := cli.App().Run(os.Args)
	if err == nil {
		return
	}
	// Commands that run a child (supervise, lock, elect) exit with the
	// child's code.
	var ec ucli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "corral:", msg)
		}
		os.Exit(ec.ExitCode())
	}
	fmt.Fprintln(os.Stderr, "corral:", err)
	os.Exit(1)
}
