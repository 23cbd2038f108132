package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

func leaseCommand() *cli.Command {
	idArg := func(c *cli.Context) (int64, error) {
		if err := wantArgs(c, 1); err != nil {
			return 0, err
		}
		id, err := strconv.ParseInt(c.Args().First(), 10, 64)
		if err != nil || id <= 0 {
			return 0, fmt.Errorf("lease id must be a positive integer, got %q", c.Args().First())
		}
		return id, nil
	}
	return &cli.Command{
		Name:  "lease",
		Usage: "grant, inspect, keep alive and revoke leases (sessions for ephemeral keys and locks)",
		Description: "   corral lease grant 30s\n" +
			"   corral lease ls\n   corral lease show 7\n   corral lease keepalive 7\n   corral lease revoke 7",
		Action: groupCommand("lease", "grant", "ls", "show", "keepalive", "revoke"),
		Subcommands: []*cli.Command{
			leaseListCommand(),
			{
				Name: "grant", Usage: "create a lease with TTL and print its id", ArgsUsage: "TTL", Flags: clientFlags(),
				Action: func(c *cli.Context) error {
					if err := wantArgs(c, 1); err != nil {
						return err
					}
					ttl, err := time.ParseDuration(c.Args().First())
					if err != nil {
						return fmt.Errorf("TTL must be a duration like 30s, got %q", c.Args().First())
					}
					cl, err := newClient(c)
					if err != nil {
						return err
					}
					l, err := cl.Grant(c.Context, ttl)
					if err != nil {
						return explain("grant lease", err)
					}
					_, err = fmt.Fprintln(c.App.Writer, l.ID)
					return err
				},
			},
			{
				Name: "show", Usage: "print a lease's TTL, remaining time, keys and locks (-o json for JSON)", ArgsUsage: "ID",
				Flags: append(clientFlags(), outputFlag("table")),
				Action: func(c *cli.Context) error {
					id, err := idArg(c)
					if err != nil {
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
					l, err := cl.TimeToLive(c.Context, id)
					if err != nil {
						return explain(fmt.Sprintf("show lease %d", id), err)
					}
					if !asJSON {
						return printLease(c.App.Writer, l)
					}
					enc := json.NewEncoder(c.App.Writer)
					enc.SetIndent("", "  ")
					return enc.Encode(map[string]any{"id": l.ID, "ttl": l.TTL.String(), "remaining": l.Remaining.String(),
						"keys": l.Keys, "locks": l.Locks})
				},
			},
			leaseKeepAliveCommand(idArg), // lease.go
			{
				Name: "revoke", Usage: "end a lease now: delete its keys, release its locks", ArgsUsage: "ID", Flags: clientFlags(),
				Action: func(c *cli.Context) error {
					id, err := idArg(c)
					if err != nil {
						return err
					}
					cl, err := newClient(c)
					if err != nil {
						return err
					}
					if err := cl.Revoke(c.Context, id); err != nil {
						return explain(fmt.Sprintf("revoke lease %d", id), err)
					}
					return nil
				},
			},
		},
	}
}

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "print changes to keys under PREFIX as JSON lines until interrupted",
		ArgsUsage: "PREFIX",
		Flags: append(clientFlags(),
			&cli.Int64Flag{Name: "from-revision", EnvVars: envVars("from-revision"),
				Usage: "start at this revision (0: only changes from now on)"}),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			w := cl.Watch(c.Context, c.Args().First(), c.Int64("from-revision"))
			enc := json.NewEncoder(c.App.Writer)
			for ev := range w.Events() {
				if err := enc.Encode(map[string]any{"type": ev.Type, "key": ev.Key, "value": printable(string(ev.Value), 1<<20),
					"mod_revision": ev.ModRevision, "lease": ev.Lease}); err != nil {
					return err
				}
			}
			if err := w.Err(); err != nil && c.Context.Err() == nil {
				return explain("watch", err)
			}
			return nil
		},
	}
}

func serviceCommand() *cli.Command {
	return &cli.Command{
		Name:  "service",
		Usage: "list the live instances of a service (corral-worker: the alive workers with their load)",
		Description: "   corral service ls\n   corral service ls master\n   corral service ls corral-worker\n" +
			"Instances register with PUT /v1/services/{name}/{instance}?lease=ID or the Go client's Register.",
		Action:      groupCommand("service", "ls", "register", "deregister"),
		Subcommands: []*cli.Command{serviceRegisterCommand(), serviceDeregisterCommand(), serviceLsCommand()}, // service.go
	}
}

func serviceRegisterCommand() *cli.Command {
	return &cli.Command{
		Name:      "register",
		Usage:     "register INSTANCE of service NAME at ADDRESS, alive while its lease is",
		ArgsUsage: "NAME INSTANCE ADDRESS",
		Description: "The instance disappears when the lease expires or is revoked:\n" +
			"   corral service register --lease $(corral lease grant 10s) master m1 10.0.0.5:5678",
		Flags: append(clientFlags(),
			&cli.Int64Flag{Name: "lease", EnvVars: envVars("lease"), Usage: "lease id (required; see 'corral lease grant')"},
			&cli.StringSliceFlag{Name: "meta", EnvVars: envVars("meta"), Usage: "metadata as key=value (repeatable)"}),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 3); err != nil {
				return err
			}
			if c.Int64("lease") <= 0 {
				return fmt.Errorf("missing --lease: create one with 'corral lease grant 10s' and keep it alive")
			}
			meta := map[string]string{}
			for _, kv := range c.StringSlice("meta") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--meta %q: want key=value", kv)
				}
				meta[k] = v
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			name, inst := c.Args().Get(0), c.Args().Get(1)
			rev, err := cl.Register(c.Context, name, inst, c.Args().Get(2), meta, c.Int64("lease"))
			if err != nil {
				return explain(fmt.Sprintf("register %s/%s", name, inst), err)
			}
			_, err = fmt.Fprintln(c.App.Writer, rev)
			return err
		},
	}
}

func serviceDeregisterCommand() *cli.Command {
	return &cli.Command{
		Name: "deregister", Usage: "remove INSTANCE of service NAME", ArgsUsage: "NAME INSTANCE", Flags: clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 2); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			if err := cl.Deregister(c.Context, c.Args().Get(0), c.Args().Get(1)); err != nil {
				return explain("deregister", err)
			}
			return nil
		},
	}
}

// printLease is `lease show -o table`.
func printLease(w io.Writer, l client.Lease) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%d\n", l.ID)
	fmt.Fprintf(tw, "ttl:\t%s\n", l.TTL)
	fmt.Fprintf(tw, "remaining:\t%s\n", l.Remaining)
	fmt.Fprintf(tw, "keys:\t%s\n", orDash(printableList(l.Keys)))
	fmt.Fprintf(tw, "locks:\t%s\n", orDash(printableList(l.Locks)))
	return tw.Flush()
}

func printableList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = printable(s, 80)
	}
	return strings.Join(out, ", ")
}

func leaseListCommand() *cli.Command {
	return &cli.Command{
		Name: "ls", Usage: "list the live leases with their TTLs, keys and locks", Flags: append(clientFlags(), outputFlag("table")),
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
			ls, err := cl.Leases(c.Context)
			if err != nil {
				return explain("list leases", err)
			}
			if asJSON {
				out := make([]map[string]any, len(ls))
				for i, l := range ls {
					out[i] = map[string]any{"id": l.ID, "ttl": l.TTL.String(), "keys": l.Keys, "locks": l.Locks}
				}
				return printJSON(c.App.Writer, out)
			}
			if len(ls) == 0 {
				_, err := fmt.Fprintln(c.App.Writer, "(no leases)")
				return err
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTTL\tKEYS\tLOCKS")
			for _, l := range ls {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", l.ID, l.TTL, len(l.Keys), orDash(printableList(l.Locks)))
			}
			return tw.Flush()
		},
	}
}
