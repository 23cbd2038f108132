package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"
)

// zk.go is `corral zk`: tools that speak the ZooKeeper client protocol, for moving off ZooKeeper. The target of
// an import is any ZooKeeper-protocol endpoint, corral's --zk-addr port in particular; nothing here talks to
// corral's HTTP API, so the same command copies between two ZooKeepers too (which is how it is tested).

func zkCommand() *cli.Command {
	return &cli.Command{
		Name:  "zk",
		Usage: "ZooKeeper migration tools: copy a live ZooKeeper tree into corral's ZooKeeper port",
		Description: "Example (flags go before arguments):\n" +
			"   corral zk import --from zk1:2181,zk2:2181 --to 127.0.0.1:2181 --dry-run\n" +
			"   corral zk import --from zk1:2181 --to 127.0.0.1:2181 --path /kafka",
		Subcommands: []*cli.Command{zkImportCommand()},
		Action:      groupCommand("zk", "import"),
	}
}

// zkImportParallel is how many znodes of one tree level are copied at once: go-zookeeper pipelines the requests
// of one session, so a migration of a large tree is bound by round trips, not by the servers.
const zkImportParallel = 16

func zkImportCommand() *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "copy a live ZooKeeper tree (data, ACLs, node types) from --from into --to",
		Description: "Walks --from breadth-first under --path and creates every znode in --to, parents before\n" +
			"children, with the data and the ACL the source reports (getACL). Persistent, container and TTL\n" +
			"nodes keep their type; ephemeral nodes belong to the source's sessions, so they are skipped and\n" +
			"counted. /zookeeper (ZooKeeper's own tree) and the root znode itself are never copied. A znode\n" +
			"that already exists in --to is skipped and counted, unless --overwrite sets its data and ACL.\n" +
			"Sequential nodes keep their names, but the parents' sequence counters (cversion) are not copied:\n" +
			"new sequential children continue from the target's counter. Both endpoints are ZooKeeper\n" +
			"connect strings without a chroot (HOST:PORT[,HOST:PORT...]); --to is corral's --zk-addr.\n" +
			"Exits 1 if any znode failed, after printing the counts and the failures.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", EnvVars: envVars("from"),
				Usage: "the source ZooKeeper, HOST:PORT[,HOST:PORT...]"},
			&cli.StringFlag{Name: "to", EnvVars: envVars("to"),
				Usage: "the target ZooKeeper-protocol endpoint (corral's --zk-addr), HOST:PORT[,HOST:PORT...]"},
			&cli.StringFlag{Name: "path", Value: "/", EnvVars: envVars("path"),
				Usage: "copy only this subtree (its missing ancestors are copied too, without their other children)"},
			&cli.BoolFlag{Name: "dry-run", EnvVars: envVars("dry-run"),
				Usage: "write nothing: read both trees and report what an import would do"},
			&cli.BoolFlag{Name: "overwrite", EnvVars: envVars("overwrite"),
				Usage: "set the data and ACL of znodes that already exist in the target (default: skip them)"},
			&cli.StringSliceFlag{Name: "from-auth", EnvVars: envVars("from-auth"),
				Usage: "SCHEME:AUTH to add to the source session, e.g. digest:user:password (repeat)"},
			&cli.StringSliceFlag{Name: "to-auth", EnvVars: envVars("to-auth"),
				Usage: "SCHEME:AUTH to add to the target session, e.g. digest:user:password (repeat)"},
			&cli.DurationFlag{Name: "timeout", Value: 15 * time.Second, EnvVars: envVars("timeout"),
				Usage: "give up when a session cannot be opened, or stays disconnected, for this long"},
			outputFlag("table"),
		},
		Action: runZKImport,
	}
}

// zkImportOptions is a checked `corral zk import` command line.
type zkImportOptions struct {
	from, to             []string
	path                 string
	dryRun, overwrite    bool
	fromAuth, toAuth     []zkAuth
	timeout              time.Duration
	fromString, toString string
}

// zkAuth is one --from-auth/--to-auth: an addAuth the session sends before it reads or writes.
type zkAuth struct {
	scheme string
	auth   []byte
}

func zkImportArgs(c *cli.Context) (zkImportOptions, error) {
	o := zkImportOptions{path: c.String("path"), dryRun: c.Bool("dry-run"), overwrite: c.Bool("overwrite"),
		timeout: c.Duration("timeout"), fromString: c.String("from"), toString: c.String("to")}
	if err := wantArgs(c, 0); err != nil {
		return o, err
	}
	var err error
	if o.from, err = zkServers("from", o.fromString); err != nil {
		return o, err
	}
	if o.to, err = zkServers("to", o.toString); err != nil {
		return o, err
	}
	if slices.Equal(o.from, o.to) {
		return o, fmt.Errorf("--from and --to are the same servers (%s): give the target's ZooKeeper port (corral's --zk-addr) as --to", o.toString)
	}
	if err := validZNodePath(o.path); err != nil {
		return o, fmt.Errorf("bad --path %q: %v; give the root of the subtree to copy, e.g. --path / or --path /kafka", o.path, err)
	}
	if o.path == "/zookeeper" || strings.HasPrefix(o.path, "/zookeeper/") {
		return o, fmt.Errorf("bad --path %q: /zookeeper is ZooKeeper's own tree (quotas, config), which the target serves itself; copy your application's tree, e.g. --path /", o.path)
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("bad --timeout %s: give a positive duration, e.g. --timeout 30s", o.timeout)
	}
	if o.fromAuth, err = zkAuths("from-auth", c.StringSlice("from-auth")); err != nil {
		return o, err
	}
	if o.toAuth, err = zkAuths("to-auth", c.StringSlice("to-auth")); err != nil {
		return o, err
	}
	switch f := c.String("output"); f {
	case "table", "json":
	default:
		return o, fmt.Errorf("bad -o %q: use table or json", f)
	}
	return o, nil
}

// zkServers checks a connect string flag: HOST:PORT items, no chroot (a chroot would silently move every path;
// --path is the way to pick a subtree).
func zkServers(flag, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("missing --%s: give a ZooKeeper connect string, e.g. --%s 127.0.0.1:2181", flag, flag)
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return nil, fmt.Errorf("bad --%s %q: a chroot (%s) is not supported; give HOST:PORT only and pick the subtree with --path", flag, s, s[i:])
	}
	servers := splitList(s)
	for _, hp := range servers {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("bad --%s %q: %q is not HOST:PORT; use e.g. --%s zk1:2181,zk2:2181", flag, s, hp, flag)
		}
	}
	return servers, nil
}

// zkAuths parses SCHEME:AUTH values; digest's AUTH is user:password, which ZooKeeper hashes itself.
func zkAuths(flag string, values []string) ([]zkAuth, error) {
	var out []zkAuth
	for _, v := range values {
		scheme, auth, ok := strings.Cut(v, ":")
		if !ok || scheme == "" || auth == "" {
			return nil, fmt.Errorf("bad --%s %q: use SCHEME:AUTH, e.g. --%s digest:user:password", flag, v, flag)
		}
		if scheme == "digest" && !strings.Contains(auth, ":") {
			return nil, fmt.Errorf("bad --%s %q: digest takes user:password, e.g. --%s digest:user:password", flag, v, flag)
		}
		out = append(out, zkAuth{scheme: scheme, auth: []byte(auth)})
	}
	return out, nil
}

// validZNodePath applies ZooKeeper's PathUtils.validatePath: absolute, no empty, "." or ".." element, no trailing
// slash but on the root, and none of the characters ZooKeeper refuses.
func validZNodePath(p string) error {
	switch {
	case p == "":
		return errors.New("the path is empty")
	case p[0] != '/':
		return errors.New("a znode path starts with /")
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return errors.New("a znode path does not end with /")
	case !utf8.ValidString(p):
		return errors.New("a znode path is UTF-8")
	}
	for _, elem := range strings.Split(p[1:], "/") {
		switch elem {
		case "":
			return errors.New("a znode path has no empty element (//)")
		case ".", "..":
			return errors.New("a znode path has no . or .. element")
		}
		for _, r := range elem {
			if r == 0 || (r > 0 && r < 0x20) || (r >= 0x7f && r <= 0x9f) ||
				(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
				return fmt.Errorf("a znode path may not hold the character %U", r)
			}
		}
	}
	return nil
}

// znodeKind is what a source znode is, as its Stat's ephemeralOwner tells (ZooKeeper's EphemeralType): 0 is a
// persistent node, Long.MIN_VALUE a container, 0xff in the top byte with type 0 in bits 40-55 a TTL node (the TTL in
// the low 40 bits, in ms), any other value the owning session of an ephemeral node. Sequential nodes are not told
// apart: their name is all that makes them sequential.
type znodeKind int

const (
	znodePersistent znodeKind = iota
	znodeEphemeral
	znodeContainer
	znodeTTL
	znodeUnknownExtended // an extended type newer than this tool
)

func kindOf(ephemeralOwner int64) (znodeKind, time.Duration) {
	const extendedMask = 0xff00000000000000
	owner := uint64(ephemeralOwner)
	switch {
	case ephemeralOwner == 0:
		return znodePersistent, 0
	case ephemeralOwner == math.MinInt64:
		return znodeContainer, 0
	case owner&extendedMask == extendedMask:
		if (owner>>40)&0xffff != 0 {
			return znodeUnknownExtended, 0
		}
		return znodeTTL, time.Duration(owner&(1<<40-1)) * time.Millisecond
	default:
		return znodeEphemeral, 0
	}
}

// zkImportReport is what `corral zk import` prints: -o json prints it as is.
type zkImportReport struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Path      string `json:"path"`
	DryRun    bool   `json:"dry_run"`
	Overwrite bool   `json:"overwrite"`
	// Created counts the znodes created (in a dry run: that would be).
	Created int `json:"created"`
	// Updated counts existing target znodes whose data and ACL --overwrite set.
	Updated int `json:"updated"`
	// SkippedExisting counts znodes left as they were because the target had them already.
	SkippedExisting int `json:"skipped_existing"`
	// EphemeralSkipped counts the source's ephemeral znodes, which belong to its sessions.
	EphemeralSkipped int `json:"ephemeral_skipped"`
	// Vanished counts znodes deleted in the source between listing and reading them (the tree is live).
	Vanished int `json:"vanished"`
	// Failed counts znodes that could not be copied; Failures says why. A failed node's subtree is not walked.
	Failed   int               `json:"failed"`
	Failures []zkImportFailure `json:"failures,omitempty"`
}

type zkImportFailure struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// zkMaxFailuresShown bounds the failures a report lists (the count stays exact), so that a target that refuses
// everything does not print a line per znode of a million-node tree.
const zkMaxFailuresShown = 100

func runZKImport(c *cli.Context) error {
	o, err := zkImportArgs(c)
	if err != nil {
		return err
	}
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
	src, err := dialZK(ctx, "--from", o.from, o.fromAuth, o.timeout)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := dialZK(ctx, "--to", o.to, o.toAuth, o.timeout)
	if err != nil {
		return err
	}
	defer dst.Close()

	im := &zkImporter{src: src, dst: dst, dryRun: o.dryRun, overwrite: o.overwrite,
		report: zkImportReport{From: o.fromString, To: o.toString, Path: o.path, DryRun: o.dryRun, Overwrite: o.overwrite}}
	walkErr := im.run(o.path)
	r := im.report
	// A level's znodes are copied in parallel: sorted, the report is the same from run to run.
	slices.SortFunc(r.Failures, func(a, b zkImportFailure) int { return strings.Compare(a.Path, b.Path) })
	if c.String("output") == "json" {
		if err := printJSON(c.App.Writer, r); err != nil {
			return err
		}
	} else if err := printZKImportTable(c.App.Writer, r); err != nil {
		return err
	}
	if walkErr != nil {
		return walkErr
	}
	if r.Failed > 0 {
		return fmt.Errorf("%d znode(s) failed to import (listed above); fix their cause and run the import again: "+
			"znodes already copied are skipped", r.Failed)
	}
	return nil
}

func printZKImportTable(w io.Writer, r zkImportReport) error {
	if r.DryRun {
		fmt.Fprintln(w, "dry run: nothing was written; CREATED and UPDATED are what an import would do")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tUPDATED\tSKIPPED-EXISTING\tEPHEMERAL-SKIPPED\tVANISHED\tFAILED")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\n", r.Created, r.Updated, r.SkippedExisting, r.EphemeralSkipped, r.Vanished, r.Failed)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Failures) > 0 {
		fmt.Fprintln(w, "\nFAILED ZNODES")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range r.Failures {
			fmt.Fprintf(tw, "%s\t%s\n", printable(f.Path, 120), f.Error)
		}
		if r.Failed > len(r.Failures) {
			fmt.Fprintf(tw, "(%d more)\t\n", r.Failed-len(r.Failures))
		}
		return tw.Flush()
	}
	return nil
}

// zkNopLogger silences go-zookeeper, which logs every connect and reconnect through the standard logger by
// default: the command's output is its report, and connection trouble ends up in its error.
type zkNopLogger struct{}

func (zkNopLogger) Printf(string, ...any) {}

// zkSessionTimeout is what the import asks the servers for: long enough that a busy server's pause does not end
// the session mid-import (the servers clamp it to their bounds).
const zkSessionTimeout = 30 * time.Second

// dialZK opens a session with servers and adds auths to it. Its watchdog closes the connection once the session
// expires or stays disconnected for timeout: go-zookeeper would otherwise retry forever and the import's next
// request would wait with it; closed, that request fails with zk.ErrClosing and the import stops.
func dialZK(ctx context.Context, flag string, servers []string, auths []zkAuth, timeout time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect(servers, zkSessionTimeout, zk.WithLogger(zkNopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", flag, strings.Join(servers, ","), err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for connected := false; !connected; {
		select {
		case ev := <-events:
			switch ev.State {
			case zk.StateHasSession:
				connected = true
			case zk.StateAuthFailed, zk.StateExpired:
				conn.Close()
				return nil, fmt.Errorf("%s %s: the server refused the session (%v); check that it is a ZooKeeper server", flag, strings.Join(servers, ","), ev.State)
			}
		case <-deadline.C:
			conn.Close()
			return nil, fmt.Errorf("%s %s: no ZooKeeper session within %s; check the address is a ZooKeeper port "+
				"(ZooKeeper's clientPort, or corral's --zk-addr) and that it is up, or raise --timeout", flag, strings.Join(servers, ","), timeout)
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
	go zkWatchdog(ctx, conn, events, timeout)
	for _, a := range auths {
		if err := conn.AddAuth(a.scheme, a.auth); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s %s: addAuth %s: %v; check the scheme (digest takes user:password)", flag, strings.Join(servers, ","), a.scheme, err)
		}
	}
	return conn, nil
}

// zkWatchdog drains the session's events (until go-zookeeper closes the channel) and closes conn when it expired,
// or was disconnected for longer than timeout, or ctx ended.
func zkWatchdog(ctx context.Context, conn *zk.Conn, events <-chan zk.Event, timeout time.Duration) {
	var down <-chan time.Time
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			switch ev.State {
			case zk.StateDisconnected:
				if down == nil {
					down = time.After(timeout)
				}
			case zk.StateHasSession:
				down = nil
			case zk.StateExpired, zk.StateAuthFailed:
				conn.Close()
			}
		case <-down:
			conn.Close()
			down = nil
		case <-ctx.Done():
			conn.Close()
			return
		}
	}
}
