package cli

import (
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/roles"
)

func controllerCommand() *cli.Command {
	return &cli.Command{
		Name:  "controller",
		Usage: "manage the controller quorum: list, add, remove, transfer-leader, recover",
		Subcommands: []*cli.Command{
			controllerListCommand(), controllerAddCommand(), controllerRemoveCommand(),
			controllerTransferCommand(), controllerRecoverCommand(),
		},
		Action: groupCommand("controller", "list", "add", "remove", "transfer-leader", "recover"),
	}
}

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("controller id must be a positive integer, got %q", s)
	}
	return id, nil
}

// idAndClient checks a command's arguments (the first is a controller id)
// and builds the API client.
func idAndClient(c *cli.Context, nargs int) (uint64, *client.Client, error) {
	if err := wantArgs(c, nargs); err != nil {
		return 0, nil, err
	}
	id, err := parseID(c.Args().Get(0))
	if err != nil {
		return 0, nil, err
	}
	cl, err := newClient(c)
	return id, cl, err
}

func controllerListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "show every controller with its role, replication progress and lag (from the leader)",
		Flags: append(clientFlags(), outputFlag("table")),
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
			list, err := cl.Controllers(c.Context)
			if err != nil {
				return explain("list controllers", err)
			}
			if asJSON {
				return printJSON(c.App.Writer, list)
			}
			q := list.Quorum
			fmt.Fprintf(c.App.Writer, "leader %d, term %d; quorum %s: %d of %d voters reachable, %d needed, tolerates %d more failure(s); %d learner(s)\n\n",
				list.LeaderID, list.Term, map[bool]string{true: "healthy", false: "UNHEALTHY"}[q.Healthy],
				q.Reachable, q.Voters, q.Needed, q.FailureTolerance, q.Learners)
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tADDRESS\tHTTP\tROLE\tVOTER\tMATCH\tLAG\tLAST CONTACT\tREACHABLE")
			for _, ci := range list.Controllers {
				contact := "-"
				if ci.LastContactMS != nil {
					contact = (time.Duration(*ci.LastContactMS) * time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%t\t%d\t%d\t%s\t%t\n", ci.ID, ci.Address, orDash(ci.HTTPAddress),
					ci.Role, ci.Voter, ci.MatchIndex, ci.Lag, contact, ci.Reachable)
			}
			return tw.Flush()
		},
	}
}

func controllerAddCommand() *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "add a controller as a learner; it becomes a voter once it has caught up",
		ArgsUsage: "ID HOST:PORT",
		Description: "HOST:PORT is the new controller's cluster (QUIC) address. Then start it with\n" +
			"   corral run --role controller --node-id ID --cluster-addr HOST:PORT --join http://EXISTING:8080 ...\n" +
			"The leader promotes it when its log has been within 100 entries of the leader's for 3s.\n" +
			"Ids are never reused: a removed controller's id cannot be added again.",
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "wait", EnvVars: envVars("wait"),
				Usage: "after adding, wait until the new controller is a voter"},
			&cli.DurationFlag{Name: "wait-timeout", Value: 2 * time.Minute, EnvVars: envVars("wait-timeout"),
				Usage: "how long --wait waits"}),
		Action: func(c *cli.Context) error {
			id, cl, err := idAndClient(c, 2)
			if err != nil {
				return err
			}
			if err := cl.AddController(c.Context, id, c.Args().Get(1)); err != nil {
				return explain(fmt.Sprintf("add controller %d", id), err)
			}
			fmt.Fprintf(c.App.Writer, "controller %d added as a learner; start it with --join\n", id)
			if !c.Bool("wait") {
				return nil
			}
			deadline := time.Now().Add(c.Duration("wait-timeout"))
			for time.Now().Before(deadline) {
				if list, err := cl.Controllers(c.Context); err == nil {
					for _, ci := range list.Controllers {
						if ci.ID == id && ci.Voter {
							fmt.Fprintf(c.App.Writer, "controller %d is a voter\n", id)
							return nil
						}
					}
				}
				time.Sleep(500 * time.Millisecond)
			}
			return fmt.Errorf("controller %d is still not a voter after %s: is it running with --join and reachable?", id, c.Duration("wait-timeout"))
		},
	}
}

func controllerRemoveCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove",
		Usage:     "remove a controller from the quorum (the leader hands leadership over first)",
		ArgsUsage: "ID",
		Flags: append(clientFlags(), &cli.BoolFlag{Name: "force", EnvVars: envVars("force"),
			Usage: "remove even if the remaining voters would have no reachable majority"}),
		Action: func(c *cli.Context) error {
			id, cl, err := idAndClient(c, 1)
			if err != nil {
				return err
			}
			if err := cl.RemoveController(c.Context, id, c.Bool("force")); err != nil {
				return explain(fmt.Sprintf("remove controller %d", id), err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "controller %d removed; stop its process and never reuse id %d\n", id, id)
			return err
		},
	}
}

func controllerTransferCommand() *cli.Command {
	return &cli.Command{
		Name:      "transfer-leader",
		Usage:     "move leadership to another voter",
		ArgsUsage: "ID",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			id, cl, err := idAndClient(c, 1)
			if err != nil {
				return err
			}
			if err := cl.TransferLeader(c.Context, id); err != nil {
				return explain(fmt.Sprintf("transfer leadership to %d", id), err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "controller %d is the leader\n", id)
			return err
		},
	}
}

func controllerRecoverCommand() *cli.Command {
	return &cli.Command{
		Name:  "recover",
		Usage: "DISASTER RECOVERY: make a stopped controller the only voter of its cluster",
		Description: "Only when a majority of controllers is lost for good. Run it on the surviving controller with\n" +
			"its process STOPPED. Writes that only the lost controllers had are gone; every entry the\n" +
			"survivor holds is kept, including some that may never have been committed. Then start it with\n" +
			"--controllers ID@HOST:PORT (itself only) and grow the cluster again with 'corral controller add'.\n" +
			"Never start the lost controllers again with their old data dirs. The old raft log is kept beside\n" +
			"the new one. See docs/OPERATIONS.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", EnvVars: envVars("data-dir"), Usage: "the stopped controller's data dir"},
			&cli.StringFlag{Name: "cluster-addr", EnvVars: envVars("cluster-addr"),
				Usage: "its cluster address, if the log does not know it"},
		},
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			dir := c.String("data-dir")
			if dir == "" {
				return fmt.Errorf("missing --data-dir: the data dir of the stopped surviving controller")
			}
			if _, err := os.Stat(dir); err != nil {
				return fmt.Errorf("--data-dir: %w", err)
			}
			res, err := roles.RecoverDataDir(dir, c.String("cluster-addr"))
			if err != nil {
				return fmt.Errorf("recover %s: %w", dir, err)
			}
			fmt.Fprintf(c.App.Writer, "WARNING: controller %d is now the only voter of its cluster (index %d, term %d).\n",
				res.NodeID, res.Index, res.Term)
			if res.BeyondCommit > 0 {
				fmt.Fprintf(c.App.Writer, "WARNING: kept %d log entries past the last commit this controller knew of; they may never have been committed.\n", res.BeyondCommit)
			}
			_, err = fmt.Fprintf(c.App.Writer, "old raft log kept at %s\nstart it with: corral run --role controller --node-id %d --data-dir %s --controllers %d@%s ...\n",
				res.OldDir, res.NodeID, dir, res.NodeID, res.Address)
			return err
		},
	}
}
