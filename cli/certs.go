package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/transport"
)

func certsCommand() *cli.Command {
	return &cli.Command{
		Name:        "certs",
		Usage:       "manage the TLS certificates controllers use to talk to each other",
		Subcommands: []*cli.Command{certsCreateCommand()},
		Action:      groupCommand("certs", "create"),
	}
}

func certsCreateCommand() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "write a CA and a node certificate (ca.pem, ca-key.pem, node.pem, node-key.pem) into --dir",
		Description: "If --dir already holds ca.pem and ca-key.pem, that CA is reused and only the node certificate\n" +
			"is issued. For a cluster: create the first node's dir, copy its ca.pem and ca-key.pem into the\n" +
			"other nodes' dirs, then run this command for each with that node's --hosts. Example:\n" +
			"   corral certs create --dir node1/tls --hosts 10.0.0.1,node1.internal",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", EnvVars: envVars("dir"), Usage: "directory to write the PEM files to"},
			&cli.StringFlag{Name: "hosts", Value: "127.0.0.1,localhost", EnvVars: envVars("hosts"),
				Usage: "comma-separated IPs and DNS names the node certificate is valid for"},
		},
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			dir := c.String("dir")
			if dir == "" {
				return errors.New("missing --dir: where to write the certificates, e.g. --dir data/tls")
			}
			hosts := splitList(c.String("hosts"))
			if len(hosts) == 0 {
				return errors.New("--hosts is empty: list the node's IPs and DNS names, e.g. --hosts 127.0.0.1,localhost")
			}
			if err := transport.CreateCerts(dir, hosts); err != nil {
				return fmt.Errorf("create certificates in %s: %w", dir, err)
			}
			_, err := fmt.Fprintf(c.App.Writer, "wrote ca.pem, ca-key.pem, node.pem and node-key.pem to %s (hosts: %s)\n",
				dir, strings.Join(hosts, ", "))
			return err
		},
	}
}
