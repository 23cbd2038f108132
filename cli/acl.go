package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
)

func aclCommand() *cli.Command {
	return &cli.Command{
		Name:  "acl",
		Usage: "API tokens and the policies that scope them (Nomad-style ACLs)",
		Description: "Once bootstrapped, every API request needs a token, and a token may do only what its policies grant:\n" +
			"   ROOT=$(corral acl bootstrap)                      # the first management token, once\n" +
			"   corral acl policy create app --rule kv:app/=write --rule jobs:app-=write --token \"$ROOT\"\n" +
			"   corral acl token create --name app --policy app --token \"$ROOT\"\n" +
			"Rules are RESOURCE[:PREFIX]=ACCESS: resource kv, coord, jobs (these take a name prefix), workers or\n" +
			"operator; access read or write (write includes read). The controllers' --api-token-file token is a\n" +
			"management token too. See docs/SECURITY.md, \"Permissions\".",
		Subcommands: []*cli.Command{aclBootstrapCommand(), aclPolicyCommand(), aclTokenCommand()},
		Action:      groupCommand("acl", "bootstrap", "policy", "token"),
	}
}

// aclJSON prints v (printJSON) when -o json (output.go), reporting whether
// the command is done: it printed, or -o was bad.
func aclJSON(c *cli.Context, v any) (done bool, err error) {
	asJSON, err := jsonOutput(c)
	if err != nil {
		return true, err
	}
	if !asJSON {
		return false, nil
	}
	return true, printJSON(c.App.Writer, v)
}

func aclBootstrapCommand() *cli.Command {
	return &cli.Command{
		Name:  "bootstrap",
		Usage: "create the first management token, once; from then on every request needs a token",
		Description: "Prints the token alone on standard output (once: the cluster keeps only its hash). Keep it safe:\n" +
			"it may do everything. With --api-token-file set on the controllers, pass that token with --token.",
		Flags: clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			t, err := cl.ACLBootstrap(c.Context)
			if errors.Is(err, client.ErrACLBootstrapped) {
				return errors.New("ACLs are bootstrapped already: create tokens with a management token ('corral acl token create --token ...')")
			}
			if err != nil {
				return explain("bootstrap ACLs", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "ACLs are on: every request needs a token now. Management token %s (accessor %s) is shown only now.\n",
				t.Name, t.AccessorID)
			_, err = fmt.Fprintln(c.App.Writer, t.Secret)
			return err
		},
	}
}

func aclPolicyCommand() *cli.Command {
	return &cli.Command{
		Name:        "policy",
		Usage:       "create, list and delete ACL policies",
		Subcommands: []*cli.Command{aclPolicyCreateCommand(), aclPolicyListCommand(), aclPolicyDeleteCommand()},
		Action:      groupCommand("acl policy", "create", "list", "delete"),
	}
}

// parseRule reads RESOURCE[:PREFIX]=ACCESS.
func parseRule(s string) (metadata.ACLRule, error) {
	bad := fmt.Errorf("bad --rule %q: want RESOURCE[:PREFIX]=ACCESS, e.g. kv:app/=write, jobs=read or operator=read", s)
	i := strings.LastIndex(s, "=")
	if i < 0 {
		return metadata.ACLRule{}, bad
	}
	res, prefix, _ := strings.Cut(s[:i], ":")
	r := metadata.ACLRule{Resource: metadata.ACLResource(res), Prefix: prefix, Access: metadata.ACLAccess(s[i+1:])}
	if err := r.Validate(); err != nil {
		return metadata.ACLRule{}, fmt.Errorf("bad --rule %q: %w", s, err)
	}
	return r, nil
}

func aclPolicyCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Aliases:   []string{"update"},
		Usage:     "create or replace policy NAME; tokens naming it change at once",
		ArgsUsage: "NAME",
		Description: "Examples:\n" +
			"   corral acl policy create readonly --rule kv=read --rule coord=read --rule jobs=read --rule workers=read --rule operator=read\n" +
			"   corral acl policy create app --rule kv:app/=write --rule coord:app-=write --rule jobs:app-=write",
		Flags: append(clientFlags(),
			&cli.StringSliceFlag{Name: "rule", EnvVars: envVars("rule"), Usage: "RESOURCE[:PREFIX]=ACCESS (repeat)"},
			&cli.StringFlag{Name: "description", EnvVars: envVars("description"), Usage: "what the policy is for"}),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			name := c.Args().First()
			if err := metadata.ValidateACLName("policy", name); err != nil {
				return err
			}
			p := client.ACLPolicy{Name: name, Description: c.String("description")}
			if len(c.StringSlice("rule")) == 0 {
				return errors.New("missing --rule: give at least one, e.g. --rule kv:app/=read")
			}
			for _, s := range c.StringSlice("rule") {
				r, err := parseRule(s)
				if err != nil {
					return err
				}
				p.Rules = append(p.Rules, client.ACLRule{Resource: string(r.Resource), Prefix: r.Prefix, Access: string(r.Access)})
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			if err := cl.PutACLPolicy(c.Context, p); err != nil {
				return explain("create ACL policy", err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "policy %s: %d rule(s)\n", name, len(p.Rules))
			return err
		},
	}
}

// ruleString is the --rule form of r.
func ruleString(r client.ACLRule) string {
	if r.Prefix == "" {
		return r.Resource + "=" + r.Access
	}
	return r.Resource + ":" + r.Prefix + "=" + r.Access
}

func rulesString(rs []client.ACLRule) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = printable(ruleString(r), 80)
	}
	return strings.Join(out, " ")
}

func aclPolicyListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the ACL policies and their rules",
		Flags: append(clientFlags(), outputFlag("table")),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			list, err := cl.ACLPolicies(c.Context)
			if err != nil {
				return explain("list ACL policies", err)
			}
			if done, err := aclJSON(c, list); done {
				return err
			}
			if len(list) == 0 {
				_, err := fmt.Fprintln(c.App.Writer, "(no policies)")
				return err
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tRULES\tDESCRIPTION")
			for _, p := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, rulesString(p.Rules), printable(dash(p.Description), 60))
			}
			return tw.Flush()
		},
	}
}

func aclPolicyDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "delete policy NAME: tokens naming it lose its grants",
		ArgsUsage: "NAME",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			name := c.Args().First()
			err = cl.DeleteACLPolicy(c.Context, name)
			if errors.Is(err, client.ErrPolicyNotFound) {
				return fmt.Errorf("policy %q not found; list them with 'corral acl policy list'", name)
			}
			if err != nil {
				return explain("delete ACL policy", err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "deleted policy %s\n", name)
			return err
		},
	}
}

func aclTokenCommand() *cli.Command {
	return &cli.Command{
		Name:        "token",
		Usage:       "create, list and delete API tokens; show your own",
		Subcommands: []*cli.Command{aclTokenCreateCommand(), aclTokenListCommand(), aclTokenDeleteCommand(), aclTokenSelfCommand()},
		Action:      groupCommand("acl token", "create", "list", "delete", "self"),
	}
}

func aclTokenCreateCommand() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "make an API token and print its secret (once: the cluster keeps only its hash)",
		Description: "Examples:\n" +
			"   corral acl token create --name dashboard --policy readonly\n" +
			"   corral acl token create --name ops --type management --ttl 720h",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "name", EnvVars: envVars("name"), Usage: "what the token is for (letters, digits, '_', '.', '-')"},
			&cli.StringSliceFlag{Name: "policy", EnvVars: envVars("policy"), Usage: "a policy the token carries (repeat)"},
			&cli.StringFlag{Name: "type", Value: metadata.ACLTypeClient, EnvVars: envVars("type"), Usage: "client (its policies' grants) or management (everything)"},
			&cli.DurationFlag{Name: "ttl", EnvVars: envVars("ttl"), Usage: "expire the token after this long (default: never)"}),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			name := c.String("name")
			if name == "" {
				return errors.New("missing --name: say what the token is for, e.g. --name app")
			}
			typ, pols := c.String("type"), c.StringSlice("policy")
			if typ == metadata.ACLTypeClient && len(pols) == 0 {
				return errors.New("missing --policy: a client token needs at least one (see 'corral acl policy list'), or pass --type management")
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			t, err := cl.CreateACLToken(c.Context, name, typ, pols, c.Duration("ttl"))
			if err != nil {
				return explain("create ACL token", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "token %s (accessor %s, %s) is shown only now; use it with --token or CORRAL_TOKEN\n",
				t.Name, t.AccessorID, t.Type)
			_, err = fmt.Fprintln(c.App.Writer, t.Secret)
			return err
		},
	}
}

func aclTokenListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the API tokens (never their secrets)",
		Flags: append(clientFlags(), outputFlag("table")),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			list, err := cl.ACLTokens(c.Context)
			if err != nil {
				return explain("list ACL tokens", err)
			}
			if done, err := aclJSON(c, list); done {
				return err
			}
			return printACLTokens(c.App.Writer, list)
		},
	}
}

func printACLTokens(w io.Writer, list []client.ACLToken) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "(no tokens)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCESSOR\tNAME\tTYPE\tPOLICIES\tCREATED\tEXPIRES")
	for _, t := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.AccessorID, t.Name, t.Type, dash(strings.Join(t.Policies, ",")),
			t.CreatedAt, dash(t.ExpiresAt))
	}
	return tw.Flush()
}

func aclTokenDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "delete the token with accessor id ACCESSOR: it is refused from now on",
		ArgsUsage: "ACCESSOR",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			acc := c.Args().First()
			err = cl.DeleteACLToken(c.Context, acc)
			if errors.Is(err, client.ErrACLTokenNotFound) {
				return fmt.Errorf("token %q not found; list accessor ids with 'corral acl token list'", acc)
			}
			if err != nil {
				return explain("delete ACL token", err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "deleted token %s\n", acc)
			return err
		},
	}
}

func aclTokenSelfCommand() *cli.Command {
	return &cli.Command{
		Name:  "self",
		Usage: "show who --token is and what it may do",
		Flags: append(clientFlags(), outputFlag("table")),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			me, err := cl.ACLTokenSelf(c.Context)
			if err != nil {
				return explain("show own ACL token", err)
			}
			if done, err := aclJSON(c, me); done {
				return err
			}
			w := c.App.Writer
			if !me.ACLEnabled {
				_, err := fmt.Fprintln(w, "ACLs are off: this cluster takes requests without a token (bootstrap with 'corral acl bootstrap')")
				return err
			}
			fmt.Fprintf(w, "accessor:  %s\nname:      %s\ntype:      %s\n", me.AccessorID, me.Name, me.Type)
			if me.Type == metadata.ACLTypeManagement {
				_, err := fmt.Fprintln(w, "may:       everything")
				return err
			}
			fmt.Fprintf(w, "policies:  %s\nrules:     %s\n", dash(strings.Join(me.Policies, ",")), dash(rulesString(me.Rules)))
			if me.ExpiresAt != "" {
				fmt.Fprintf(w, "expires:   %s\n", me.ExpiresAt)
			}
			return nil
		},
	}
}
