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
	"sync"
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

// zkImporter copies one tree. The walk is breadth-first, one level at a time, so every parent exists in the
// target before any of its children is created; the znodes of a level are copied zkImportParallel at a time.
type zkImporter struct {
	src, dst          *zk.Conn
	dryRun, overwrite bool

	mu     sync.Mutex
	report zkImportReport
}

// run copies the tree under root. Its error is for what stops the whole import (a lost session); what goes wrong
// with one znode is counted in the report.
func (im *zkImporter) run(root string) error {
	level := []string{root}
	if exists, _, err := im.src.Exists(root); err != nil {
		return im.fatal("check "+root+" in the source", err)
	} else if !exists {
		return fmt.Errorf("--path %s does not exist in the source; list the source's tree (zkCli.sh ls /) and pick an existing path", root)
	}
	if root != "/" {
		// The ancestors of --path first, each without its other children, so that root has a parent.
		var ancestors []string
		for p := parentPath(root); p != "/"; p = parentPath(p) {
			ancestors = append(ancestors, p)
		}
		slices.Reverse(ancestors)
		for _, a := range ancestors {
			if _, ok, err := im.copyNode(a); err != nil {
				return err
			} else if !ok {
				im.fail(root, fmt.Errorf("its ancestor %s could not be copied", a))
				return nil
			}
		}
	} else {
		// The root always exists, and is ZooKeeper's, not the application's: only its children are copied.
		kids, _, err := im.src.Children("/")
		if err != nil {
			return im.fatal("list / in the source", err)
		}
		level = nil
		for _, k := range kids {
			if k != "zookeeper" {
				level = append(level, "/"+k)
			}
		}
	}
	for len(level) > 0 {
		next, err := im.copyLevel(level)
		if err != nil {
			return err
		}
		level = next
	}
	return nil
}

// copyLevel copies the znodes of one level and returns the next level: the children of those that were copied or
// already existed.
func (im *zkImporter) copyLevel(paths []string) ([]string, error) {
	type result struct {
		kids []string
		err  error
	}
	results := make([]result, len(paths))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(zkImportParallel, len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				kids, _, err := im.copyNode(paths[i])
				results[i] = result{kids, err}
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()
	var next []string
	for i, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		for _, k := range r.kids {
			next = append(next, joinPath(paths[i], k))
		}
	}
	return next, nil
}

// copyNode copies one znode and returns its children in the source; ok reports whether the node now exists in the
// target (or would, in a dry run), so that its children may follow.
func (im *zkImporter) copyNode(p string) (kids []string, ok bool, err error) {
	data, stat, err := im.src.Get(p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		im.count(func(r *zkImportReport) { r.Vanished++ })
		return nil, false, nil
	case isSessionLost(err):
		return nil, false, im.fatal("read "+p+" in the source", err)
	case err != nil:
		im.fail(p, fmt.Errorf("read from the source: %v%s", err, authHint(err, "--from-auth")))
		return nil, false, nil
	}
	kind, ttl := kindOf(stat.EphemeralOwner)
	switch kind {
	case znodeEphemeral:
		// It belongs to a session of the source; its owner recreates it when it connects to the target.
		im.count(func(r *zkImportReport) { r.EphemeralSkipped++ })
		return nil, false, nil
	case znodeUnknownExtended:
		im.fail(p, fmt.Errorf("unknown node type (ephemeralOwner %#x): this corral does not know how to copy it", uint64(stat.EphemeralOwner)))
		return nil, false, nil
	}
	acl, _, err := im.src.GetACL(p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		im.count(func(r *zkImportReport) { r.Vanished++ })
		return nil, false, nil
	case isSessionLost(err):
		return nil, false, im.fatal("read the ACL of "+p+" in the source", err)
	case err != nil:
		im.fail(p, fmt.Errorf("read its ACL from the source: %v%s", err, authHint(err, "--from-auth")))
		return nil, false, nil
	case redactedACL(acl):
		im.fail(p, errors.New("the source hid the digest hashes of its ACL (user:x), as ZooKeeper does for a session "+
			"without ADMIN on the znode; add an identity the ACL grants ADMIN with --from-auth digest:user:password"))
		return nil, false, nil
	}
	if stat.NumChildren > 0 {
		kids, _, err = im.src.Children(p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			im.count(func(r *zkImportReport) { r.Vanished++ })
			return nil, false, nil
		case isSessionLost(err):
			return nil, false, im.fatal("list "+p+" in the source", err)
		case err != nil:
			im.fail(p, fmt.Errorf("list its children in the source: %v%s", err, authHint(err, "--from-auth")))
			return nil, false, nil
		}
		slices.Sort(kids)
	}

	if im.dryRun {
		exists, _, err := im.dst.Exists(p)
		switch {
		case isSessionLost(err):
			return nil, false, im.fatal("check "+p+" in the target", err)
		case err != nil:
			im.fail(p, fmt.Errorf("check the target: %v", err))
			return nil, false, nil
		case exists && im.overwrite:
			im.count(func(r *zkImportReport) { r.Updated++ })
		case exists:
			im.count(func(r *zkImportReport) { r.SkippedExisting++ })
		default:
			im.count(func(r *zkImportReport) { r.Created++ })
		}
		return kids, true, nil
	}

	switch kind {
	case znodeContainer:
		_, err = im.dst.CreateContainer(p, data, zk.FlagContainer, acl)
	case znodeTTL:
		// The TTL counts from the last change, which for the copy is now: a TTL node lives up to one TTL longer
		// in the target than it would have in the source.
		_, err = im.dst.CreateTTL(p, data, zk.FlagTTL, acl, ttl)
	default:
		// A sequential node is created by its full name, so it is persistent in plain terms.
		_, err = im.dst.Create(p, data, zk.FlagPersistent, acl)
	}
	switch {
	case err == nil:
		im.count(func(r *zkImportReport) { r.Created++ })
		return kids, true, nil
	case isSessionLost(err):
		return nil, false, im.fatal("create "+p+" in the target", err)
	case errors.Is(err, zk.ErrNodeExists) && !im.overwrite:
		im.count(func(r *zkImportReport) { r.SkippedExisting++ })
		return kids, true, nil
	case errors.Is(err, zk.ErrNodeExists):
		if err := im.overwriteNode(p, data, acl); err != nil {
			if isSessionLost(err) {
				return nil, false, im.fatal("overwrite "+p+" in the target", err)
			}
			im.fail(p, err)
			return nil, false, nil
		}
		im.count(func(r *zkImportReport) { r.Updated++ })
		return kids, true, nil
	case kind == znodeTTL:
		im.fail(p, fmt.Errorf("create a TTL node (TTL %s) in the target: %v%s (a ZooKeeper target makes TTL nodes only "+
			"when started with -Dzookeeper.extendedTypesEnabled=true)", ttl, err, authHint(err, "--to-auth")))
	default:
		im.fail(p, fmt.Errorf("create in the target: %v%s", err, authHint(err, "--to-auth")))
	}
	return nil, false, nil
}

// overwriteNode makes an existing target znode's data and ACL the source's; its type stays what it is.
func (im *zkImporter) overwriteNode(p string, data []byte, acl []zk.ACL) error {
	if _, err := im.dst.Set(p, data, -1); err != nil {
		return fmt.Errorf("set its data in the target: %w%s", err, authHint(err, "--to-auth"))
	}
	have, _, err := im.dst.GetACL(p)
	if err != nil {
		return fmt.Errorf("read its ACL in the target: %w%s", err, authHint(err, "--to-auth"))
	}
	if !slices.Equal(have, acl) {
		if _, err := im.dst.SetACL(p, acl, -1); err != nil {
			return fmt.Errorf("set its ACL in the target: %w%s", err, authHint(err, "--to-auth"))
		}
	}
	return nil
}

// redactedACL reports whether getACL hid digest hashes: ZooKeeper answers a session without ADMIN on the znode
// with "user:x" for every digest id, and copying that would lock everyone out of the copy (a real digest is a
// base64 SHA-1, never "x").
func redactedACL(acl []zk.ACL) bool {
	for _, a := range acl {
		if a.Scheme == "digest" && strings.HasSuffix(a.ID, ":x") {
			return true
		}
	}
	return false
}

// authHint says what to do about a NoAuth: the importer's session lacks an identity the znode's ACL (or its
// parent's, for a create) grants.
func authHint(err error, flag string) string {
	if errors.Is(err, zk.ErrNoAuth) {
		return fmt.Sprintf(" (the ACL does not grant this session; add an identity it grants with %s digest:user:password)", flag)
	}
	return ""
}

// isSessionLost reports errors after which no request on the connection will succeed: the walk stops instead of
// failing every remaining znode one by one.
func isSessionLost(err error) bool {
	return errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrAuthFailed)
}

func (im *zkImporter) fatal(what string, err error) error {
	if !isSessionLost(err) {
		return fmt.Errorf("%s: %v%s", what, err, authHint(err, "--from-auth"))
	}
	return fmt.Errorf("%s: %v: the session was lost (server down, or disconnected longer than --timeout); "+
		"run the import again once both ends are up: znodes already copied are skipped", what, err)
}

func (im *zkImporter) count(f func(*zkImportReport)) {
	im.mu.Lock()
	defer im.mu.Unlock()
	f(&im.report)
}

func (im *zkImporter) fail(p string, err error) {
	im.count(func(r *zkImportReport) {
		r.Failed++
		if len(r.Failures) < zkMaxFailuresShown {
			r.Failures = append(r.Failures, zkImportFailure{Path: p, Error: err.Error()})
		}
	})
}

// parentPath is the parent of a valid znode path other than "/".
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func joinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}
