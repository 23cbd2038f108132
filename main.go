// Command corral is a cluster's coordination service and workload runner in one binary.
package main

import (
	"fmt"
	"os"

	"github.com/corral-dev/corral/cli"
)

func main() {
	if err := cli.App().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "corral:", err)
		os.Exit(1)
	}
}
