package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

// exitLost is the exit code of `corral lock` and `corral elect` when the lock or leadership was lost while the
// command ran (the command was killed).
const exitLost = 75

func sessionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "ttl", Value: 10 * time.Second, EnvVars: envVars("ttl"),
			Usage: "lease TTL: if this process dies, the lock is released this long after"},
		&cli.DurationFlag{Name: "wait", EnvVars: envVars("wait"),
			Usage: "give up (exit 1) if not acquired within this long; 0 waits forever"},
	}
}

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "run COMMAND while holding the distributed lock NAME",
		ArgsUsage: "NAME -- COMMAND [ARGS...]",
		Description: "Waits for the lock (first come, first served), then runs COMMAND with CORRAL_FENCING_TOKEN\n" +
			"(grows with every grant of NAME) and CORRAL_LEASE_ID in its environment, keeping the lease alive.\n" +
			"If the lock may be lost (lease expired, or no keep-alive confirmed for half the TTL), COMMAND is\n" +
			"killed and corral exits with code 75. Otherwise corral exits with COMMAND's exit code.\n" +
			"   corral lock nightly-report -- ./report.sh --date today",
		Flags: append(clientFlags(), sessionFlags()...),
		Action: func(c *cli.Context) error {
			return runHolding(c, "lock", func(ctx context.Context, cl *client.Client, s *client.Session, name string) (int64, []string, error) {
				l := s.NewLock(name)
				tok, err := l.TryLock(ctx)
				if errors.Is(err, client.ErrLockBusy) {
					sayLockWait(ctx, c, cl, name)
					tok, err = l.Lock(ctx)
				}
				return tok, []string{"CORRAL_FENCING_TOKEN=" + strconv.FormatInt(tok, 10)}, err
			})
		},
	}
}

func electCommand() *cli.Command {
	return &cli.Command{
		Name:      "elect",
		Usage:     "run COMMAND while this instance leads the election NAME",
		ArgsUsage: "NAME -- COMMAND [ARGS...]",
		Description: "Campaigns as --id, then runs COMMAND with CORRAL_ELECTION_EPOCH (and CORRAL_FENCING_TOKEN, the\n" +
			"same number) in its environment. Leadership ends with COMMAND; if it may be lost, COMMAND is killed\n" +
			"and corral exits with code 75.\n" +
			"   corral elect --id $(hostname) coordinator -- ./coordinator",
		Flags: append(append(clientFlags(), sessionFlags()...),
			&cli.StringFlag{Name: "id", Required: true, EnvVars: envVars("id"), Usage: "this candidate's identity"}),
		Action: func(c *cli.Context) error {
			return runHolding(c, "elect", func(ctx context.Context, cl *client.Client, s *client.Session, name string) (int64, []string, error) {
				e := s.NewElection(name)
				if lead, err := cl.Leader(ctx, name); err == nil && lead.Leader != "" && lead.Leader != c.String("id") {
					fmt.Fprintf(c.App.ErrWriter, "corral elect: waiting to lead %s: %s leads it (epoch %d)%s\n",
						printable(name, 128), printable(lead.Leader, 128), lead.Epoch, waitLimit(c))
				}
				ep, err := e.Campaign(ctx, c.String("id"))
				n := strconv.FormatInt(ep, 10)
				return ep, []string{"CORRAL_ELECTION_EPOCH=" + n, "CORRAL_FENCING_TOKEN=" + n}, err
			})
		},
	}
}

type acquireFunc func(ctx context.Context, cl *client.Client, s *client.Session, name string) (int64, []string, error)

func runHolding(c *cli.Context, what string, acquire acquireFunc) error {
	args := c.Args().Slice()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) < 2 {
		return fmt.Errorf("usage: corral %s [flags] NAME -- COMMAND [ARGS...]", what)
	}
	name, argv := args[0], args[1:]
	if argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return fmt.Errorf("corral %s %s: missing COMMAND after --", what, name)
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := cl.NewSession(ctx, c.Duration("ttl"))
	if err != nil {
		return explain(what+" "+name, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Close(cctx) // revoking the lease releases the lock at once
		cancel()
	}()
	actx := ctx
	if w := c.Duration("wait"); w > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, w)
		defer cancel()
	}
	tok, env, err := acquire(actx, cl, s, name)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("%s %s: not acquired within --wait %s (someone else holds it)", what, name, c.Duration("wait"))
		}
		return explain(fmt.Sprintf("%s %s", what, name), err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.App.Writer, c.App.ErrWriter
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "CORRAL_LEASE_ID="+strconv.FormatInt(s.LeaseID(), 10))
	// Own process group: losing the lock kills COMMAND and everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s %s: start %s: %w", what, name, argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return exitWith(err)
	case <-s.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return cli.Exit(fmt.Sprintf("%s %s (fencing token %d) may be lost: %v; killed %s", what, name, tok, s.Err(), argv[0]), exitLost)
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		return exitWith(<-exited)
	}
}

// exitWith turns a child's exit into corral's exit code.
func exitWith(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
		return cli.Exit("", code)
	}
	return err
}

// sayLockWait tells the user, on stderr, who holds the lock they wait for: a `corral lock` that just sits there
// looks hung.
func sayLockWait(ctx context.Context, c *cli.Context, cl *client.Client, name string) {
	holder := "someone else"
	if info, err := cl.LockInfo(ctx, name); err == nil && info.Held {
		holder = fmt.Sprintf("lease %d", info.Lease)
		if info.Owner != "" {
			holder += " (" + printable(info.Owner, 128) + ")"
		}
		holder += fmt.Sprintf(", fencing token %d", info.FencingToken)
		if n := len(info.Waiters); n > 0 {
			holder += fmt.Sprintf("; %d waiting", n)
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "corral lock: waiting for lock %s, held by %s%s\n", printable(name, 128), holder, waitLimit(c))
}

// waitLimit says how long the wait may last.
func waitLimit(c *cli.Context) string {
	if w := c.Duration("wait"); w > 0 {
		return fmt.Sprintf("; giving up after --wait %s", w)
	}
	return "; Ctrl-C to give up"
}
