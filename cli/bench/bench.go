// Package bench measures a running corral cluster: it is the `corral bench` subcommands (kv, lock, watch, lease,
// workers and schedule), which load a cluster from outside and report throughput, latency and false fencings.
//
// Only package cli imports it. It does not import cli either: what every corral command shares (the client flags,
// how they become a client, how errors are explained, the logger flags) comes in through Env, so that the
// benchmarks read their flags exactly like the other commands and can be tested with a stand-in.
package bench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

// Env is what the benchmarks take from the command line around them. Every field is required.
type Env struct {
	// EnvVars names the environment variables that back a flag, e.g. "key-prefix" -> CORRAL_KEY_PREFIX.
	EnvVars func(flag string) []string
	// ClientFlags returns fresh --endpoints, --token and --timeout flags.
	ClientFlags func() []cli.Flag
	// NewClient builds a client from the flags ClientFlags defines.
	NewClient func(c *cli.Context) (*client.Client, error)
	// Explain wraps a client error from op with what the user can do about it.
	Explain func(op string, err error) error
	// WantArgs checks that a command got n positional arguments and says what it expects if not.
	WantArgs func(c *cli.Context, n int) error
	// NewLogger builds the simulated workers' logger from --log-level and --log-format, writing to w.
	NewLogger func(c *cli.Context, w io.Writer) (*slog.Logger, error)
	// ParseControllers turns a --controllers value into the controllers' cluster (QUIC) addresses.
	ParseControllers func(s string) ([]string, error)
}

// Commands returns the `corral bench` subcommands, in the order `corral bench --help` lists them.
func Commands(e Env) []*cli.Command {
	return []*cli.Command{
		e.kvCommand(), e.lockCommand(), e.watchCommand(), e.leaseCommand(), e.workersCommand(), e.scheduleCommand(),
	}
}

// The helpers below are tiny copies of cli's: sharing them would need a util package for five lines each.

// splitList splits a comma-separated flag value, dropping empty items and surrounding spaces.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// orDash prints an unknown value as "-" so that table columns stay aligned.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// signalContext is cancelled on SIGINT or SIGTERM so that an interrupted benchmark still reports what it measured
// and cleans up its jobs and simulated workers.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// formatLatency rounds a latency for tables: microseconds are enough, nanoseconds are noise.
func formatLatency(d time.Duration) string {
	return d.Round(time.Microsecond).String()
}
