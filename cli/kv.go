package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

func kvCommand() *cli.Command {
	return &cli.Command{
		Name:  "kv",
		Usage: "read and write keys in the cluster's metadata store",
		Description: "Examples (flags go before arguments):\n" +
			"   corral kv put config/db '{\"host\":\"db1\"}'\n" +
			"   corral kv put --prev-revision 5 config/db '{\"host\":\"db2\"}'\n" +
			"   corral kv get config/db\n" +
			"   corral kv ls config/\n" +
			"   corral kv del config/db",
		Subcommands: []*cli.Command{kvPutCommand(), kvGetCommand(), kvDelCommand(), kvLsCommand()},
		Action:      groupCommand("kv", "put", "get", "del", "ls"),
	}
}

func kvPutCommand() *cli.Command {
	return &cli.Command{
		Name:      "put",
		Usage:     "set KEY to VALUE and print the new store revision",
		ArgsUsage: "KEY VALUE",
		Description: "With --prev-revision N the write happens only if KEY's mod revision is still N\n" +
			"(0: only if KEY does not exist), e.g. corral kv put --prev-revision 0 lock/leader me",
		Flags: append(clientFlags(),
			&cli.Int64Flag{Name: "prev-revision", EnvVars: envVars("prev-revision"),
				Usage: "compare-and-set: only write if KEY's mod revision is N (0: only if absent)"},
			&cli.Int64Flag{Name: "lease", EnvVars: envVars("lease"),
				Usage: "attach the key to lease ID: it is deleted when the lease ends (see 'corral lease grant')"},
		),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 2); err != nil {
				return err
			}
			key, value := c.Args().Get(0), []byte(c.Args().Get(1))
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			var rev int64
			if c.IsSet("prev-revision") && c.IsSet("lease") {
				return errors.New("--prev-revision and --lease cannot be combined")
			}
			if c.IsSet("prev-revision") {
				prev := c.Int64("prev-revision")
				if prev < 0 {
					return fmt.Errorf("--prev-revision must be >= 0, got %d", prev)
				}
				rev, err = cl.CompareAndPut(c.Context, key, value, prev)
				var apiErr *client.Error
				if errors.Is(err, client.ErrCompareFailed) && errors.As(err, &apiErr) {
					return fmt.Errorf("put %q: compare failed: its mod revision is %d, not %d (read it with '%s')",
						key, apiErr.ModRevision, prev, hint(c, "kv get", key))
				}
			} else if lease := c.Int64("lease"); lease != 0 {
				rev, err = cl.PutWithLease(c.Context, key, value, lease)
			} else {
				rev, err = cl.Put(c.Context, key, value)
			}
			if err != nil {
				return explain(fmt.Sprintf("put %q", key), err)
			}
			_, err = fmt.Fprintln(c.App.Writer, rev)
			return err
		},
	}
}

func serializableFlag() cli.Flag {
	return &cli.BoolFlag{Name: "serializable", EnvVars: envVars("serializable"),
		Usage: "read the contacted controller's local state: faster, works without a leader, may be stale"}
}

func readOpts(c *cli.Context) []client.ReadOption {
	if c.Bool("serializable") {
		return []client.ReadOption{client.Serializable()}
	}
	return nil
}

func kvGetCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "print KEY's value",
		ArgsUsage: "KEY",
		Flags:     append(clientFlags(), serializableFlag()),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			key := c.Args().First()
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			kv, err := cl.Get(c.Context, key, readOpts(c)...)
			if keyNotFound(err) {
				return fmt.Errorf("key %q not found (list keys with '%s')", key, hint(c, "kv ls", "PREFIX"))
			}
			if err != nil {
				return explain(fmt.Sprintf("get %q", key), err)
			}
			if _, err := c.App.Writer.Write(kv.Value); err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.App.Writer)
			return err
		},
	}
}

func kvDelCommand() *cli.Command {
	return &cli.Command{
		Name:      "del",
		Aliases:   []string{"delete", "rm"},
		Usage:     "delete KEY and print how many keys were deleted (0 or 1)",
		ArgsUsage: "KEY",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1); err != nil {
				return err
			}
			key := c.Args().First()
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			_, deleted, err := cl.Delete(c.Context, key)
			if err != nil {
				return explain(fmt.Sprintf("delete %q", key), err)
			}
			_, err = fmt.Fprintln(c.App.Writer, deleted)
			return err
		},
	}
}

func kvLsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Aliases:   []string{"list"},
		Usage:     "list the keys starting with PREFIX (all keys without PREFIX)",
		ArgsUsage: "[PREFIX]",
		Flags:     append(clientFlags(), serializableFlag(), outputFlag("table")),
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return fmt.Errorf("'corral kv ls' takes at most one PREFIX, got %d arguments; usage: corral kv ls [flags] [PREFIX]", c.NArg())
			}
			prefix := c.Args().First()
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			if asJSON {
				return kvLsJSON(c, cl, prefix)
			}
			// The server answers in pages (docs/API.md, "Range reads"):
			// print each as it comes, so memory stays bounded by a page.
			// Columns are aligned within a page.
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tMOD REVISION")
			n := 0
			rev, err := cl.ListPages(c.Context, prefix, 0, func(p client.Page) error {
				for _, kv := range p.KVs {
					fmt.Fprintf(tw, "%s\t%s\t%d\n", printable(kv.Key, 80), printable(string(kv.Value), 60), kv.ModRevision)
				}
				n += len(p.KVs)
				return tw.Flush()
			}, readOpts(c)...)
			if err != nil {
				_ = tw.Flush()
				return explain(fmt.Sprintf("list %q", prefix), err)
			}
			fmt.Fprintf(c.App.ErrWriter, "%d key(s) at revision %d\n", n, rev)
			return nil
		},
	}
}

// kvLsJSON prints `kv ls -o json`: {"kvs": [...], "revision": N}, written page by page like the table so that
// memory stays bounded by a page. Values are strings when they are UTF-8, else base64 under "value_base64".
func kvLsJSON(c *cli.Context, cl *client.Client, prefix string) error {
	w := c.App.Writer
	if _, err := io.WriteString(w, "{\"kvs\": ["); err != nil {
		return err
	}
	n := 0
	rev, err := cl.ListPages(c.Context, prefix, 0, func(p client.Page) error {
		for _, kv := range p.KVs {
			item := map[string]any{"key": kv.Key, "create_revision": kv.CreateRevision,
				"mod_revision": kv.ModRevision, "version": kv.Version}
			if utf8.Valid(kv.Value) {
				item["value"] = string(kv.Value)
			} else {
				item["value_base64"] = kv.Value // encoding/json writes []byte as base64
			}
			b, err := json.Marshal(item)
			if err != nil {
				return err
			}
			sep := ",\n  "
			if n == 0 {
				sep = "\n  "
			}
			if _, err := fmt.Fprintf(w, "%s%s", sep, b); err != nil {
				return err
			}
			n++
		}
		return nil
	}, readOpts(c)...)
	if err != nil {
		return explain(fmt.Sprintf("list %q", prefix), err)
	}
	_, err = fmt.Fprintf(w, "\n], \"revision\": %d}\n", rev)
	return err
}

// keyNotFound reports whether err is the controller's answer that the key does not exist. Any server that is
// not a controller's API (a worker's HTTP port, a proxy) may answer 404 with the same "not_found" code for a
// route it does not have: that must show as its own message, not as a missing key.
func keyNotFound(err error) bool {
	var apiErr *client.Error
	if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.Message == "" || strings.HasPrefix(apiErr.Message, "key ")
}
