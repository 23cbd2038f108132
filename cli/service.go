package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

// Where the service registry lives in the key space (metadata.ServicePrefix: _corral/services/NAME/INSTANCE), read
// through the public KV API, which lets anyone read and watch the system keys; and the service the controllers
// fill with the alive workers, which has no keys.
const (
	servicePrefix = "_corral/services/"
	workerService = "corral-worker"
)

func serviceLsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Aliases:   []string{"list"},
		Usage:     "list the services and their instance counts, or with NAME a service's live instances",
		ArgsUsage: "[NAME]",
		Flags:     append(clientFlags(), outputFlag("table")),
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return fmt.Errorf("'corral service ls' takes at most one NAME, got %d arguments; usage: corral service ls [flags] [NAME]", c.NArg())
			}
			// Tables by default, as every other list (-o json for scripts).
			name := c.Args().First()
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			if name == "" {
				return listServices(c, cl, asJSON)
			}
			inst, rev, err := cl.Instances(c.Context, name)
			if err != nil {
				return explain("list service "+name, err)
			}
			if !asJSON {
				return printInstances(c.App.Writer, inst)
			}
			if inst == nil {
				inst = []client.ServiceInstance{}
			}
			return printJSON(c.App.Writer, map[string]any{"service": name, "instances": inst, "revision": rev})
		},
	}
}

// serviceCount is one row of `service ls` without NAME.
type serviceCount struct {
	Name      string `json:"name"`
	Instances int    `json:"instances"`
}

// listServices counts the instances of every registered service, reading the registry's keys page by page,
// and adds corral-worker (the alive workers).
func listServices(c *cli.Context, cl *client.Client, asJSON bool) error {
	counts := map[string]int{}
	rev, err := cl.ListPages(c.Context, servicePrefix, 0, func(p client.Page) error {
		for _, kv := range p.KVs {
			name, _, ok := strings.Cut(strings.TrimPrefix(kv.Key, servicePrefix), "/")
			if ok && name != "" {
				counts[name]++
			}
		}
		return nil
	})
	if err != nil {
		return explain("list services", err)
	}
	workers, _, err := cl.Instances(c.Context, workerService)
	if err != nil {
		return explain("list services", err)
	}
	counts[workerService] += len(workers)
	list := make([]serviceCount, 0, len(counts))
	for n, k := range counts {
		list = append(list, serviceCount{Name: n, Instances: k})
	}
	sort.Slice(list, func(i, k int) bool { return list[i].Name < list[k].Name })
	if asJSON {
		return printJSON(c.App.Writer, map[string]any{"services": list, "revision": rev})
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tINSTANCES")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%d\n", printable(s.Name, 64), s.Instances)
	}
	return tw.Flush()
}

// printInstances is `service ls NAME -o table`.
func printInstances(w io.Writer, inst []client.ServiceInstance) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tADDRESS\tLEASE\tMETADATA")
	for _, in := range inst {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", printable(in.Instance, 64), orDash(printable(in.Address, 64)), in.Lease,
			orDash(formatLabels(in.Metadata)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(inst) == 0 {
		_, err := fmt.Fprintln(w, "(no live instances)")
		return err
	}
	return nil
}
