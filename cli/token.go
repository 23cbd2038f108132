package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
)

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "join tokens: a new worker trades one for its certificate, so it needs no 'corral certs issue'",
		Description: "A controller started with --ca-dir signs the certificate of a worker that presents a live token:\n" +
			"   TOKEN=$(corral token create --role worker --ttl 1h --uses 1)\n" +
			"   corral run --role worker --join-token \"$TOKEN\" --ca-cert ca.pem --controllers 10.0.0.1:7001 --data-dir /var/lib/corral\n" +
			"The token is a bearer secret until it expires or is used up: it is shown once, and the cluster keeps only its hash.",
		Subcommands: []*cli.Command{tokenCreateCommand(), tokenListCommand(), tokenRevokeCommand()},
		Action:      groupCommand("token", "create", "list", "revoke"),
	}
}

func tokenCreateCommand() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "make a join token and print it (once: the cluster keeps only its hash)",
		Description: "Prints the token alone on standard output, what it admits on standard error. Example:\n" +
			"   corral token create --role worker --ttl 24h --uses 10",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "role", EnvVars: envVars("role"), Usage: "what the token admits: worker (the only role for now)"},
			&cli.DurationFlag{Name: "ttl", Value: time.Hour, EnvVars: envVars("ttl"),
				Usage: fmt.Sprintf("how long the token is valid (%v to %v)", metadata.MinJoinTokenTTL, metadata.MaxJoinTokenTTL)},
			&cli.IntFlag{Name: "uses", Value: 1, EnvVars: envVars("uses"),
				Usage: fmt.Sprintf("how many workers may join with it (1 to %d)", metadata.MaxJoinTokenUses)}),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			role := c.String("role")
			if role == "" {
				return errors.New("missing --role: join tokens admit workers: --role worker")
			}
			if err := metadata.ValidateJoinTokenParams(role, c.Duration("ttl"), c.Int("uses")); err != nil {
				return fmt.Errorf("bad --role, --ttl or --uses: %w", err)
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			t, err := cl.CreateJoinToken(c.Context, role, c.Duration("ttl"), c.Int("uses"))
			if errors.Is(err, client.ErrTooManyTokens) {
				return fmt.Errorf("create join token: %w (revoke unused ones with '%s', see '%s')", err,
					hint(c, "token revoke", "ID"), hint(c, "token list"))
			}
			if err != nil {
				return explain("create join token", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "join token %s admits %d %s(s) until %s; it is shown only now. Start a worker with:\n"+
				"   corral run --role worker --join-token TOKEN --ca-cert CA.pem --controllers ... --data-dir DIR\n",
				t.ID, t.Uses, t.Role, t.ExpiresAt)
			_, err = fmt.Fprintln(c.App.Writer, t.Token)
			return err
		},
	}
}

func tokenListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the join tokens (live ones, and those expired or used up in the last day); never their secrets",
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
			list, err := cl.JoinTokens(c.Context)
			if err != nil {
				return explain("list join tokens", err)
			}
			if asJSON {
				if list == nil {
					list = []client.JoinToken{}
				}
				return printJSON(c.App.Writer, map[string]any{"tokens": list})
			}
			if len(list) == 0 {
				_, err := fmt.Fprintln(c.App.Writer, "(no join tokens)")
				return err
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tROLE\tUSES LEFT\tEXPIRES\tSTATE\tLAST WORKER")
			for _, t := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", t.ID, t.Role, t.UsesLeft, t.Uses, t.ExpiresAt, t.State,
					printable(dash(t.LastWorker), 64))
			}
			return tw.Flush()
		},
	}
}

func tokenRevokeCommand() *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "delete join token ID: it admits no worker from now on",
		ArgsUsage: "ID",
		Description: "Workers that already joined with it keep their certificates; deny those with\n" +
			"'corral certs revoke --worker ID'. Example: corral token revoke 3f9a0c1d2e4b5a69",
		Flags: clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			id := c.Args().First()
			if err := metadata.ValidateJoinTokenID(id); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			err = cl.RevokeJoinToken(c.Context, id)
			if errors.Is(err, client.ErrTokenNotFound) {
				return fmt.Errorf("join token %s not found; list them with 'corral token list'", id)
			}
			if err != nil {
				return explain("revoke join token", err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "revoked join token %s: it admits no worker from now on\n", id)
			return err
		},
	}
}
