package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

func leaseKeepAliveCommand(idArg func(*cli.Context) (int64, error)) *cli.Command {
	return &cli.Command{
		Name:      "keepalive",
		Usage:     "keep a lease alive until interrupted (--once: refresh it once)",
		ArgsUsage: "ID",
		Description: "Refreshes the lease every third of its TTL. Ctrl-C stops refreshing and exits 0: the lease\n" +
			"then expires after its TTL (revoke it with 'corral lease revoke ID' to end it at once).",
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "once", EnvVars: envVars("once"), Usage: "refresh the lease once and exit"}),
		Action: func(c *cli.Context) error {
			id, err := idArg(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			if c.Bool("once") {
				return explainLease(c, id, cl.KeepAliveOnce(c.Context, id))
			}
			ctx, stop := signalContext(c.Context)
			defer stop()
			return keepLeaseAlive(ctx, c, cl, id)
		},
	}
}

// keepLeaseAlive refreshes lease id every TTL/3 until ctx ends (nil: the user stopped it). A failed refresh is
// retried at the next tick; the command fails once the lease is gone, or when no refresh succeeded for a whole
// TTL, since the lease has then expired in all likelihood.
func keepLeaseAlive(ctx context.Context, c *cli.Context, cl *client.Client, id int64) error {
	l, err := cl.TimeToLive(ctx, id)
	if err != nil {
		return explainLease(c, id, err)
	}
	if l.TTL <= 0 {
		return fmt.Errorf("lease %d has no TTL in the controller's answer; is the controller too old for this CLI?", id)
	}
	every := l.TTL / 3
	fmt.Fprintf(c.App.ErrWriter, "keeping lease %d alive (TTL %s, refreshed every %s); Ctrl-C to stop\n", id, l.TTL, every.Round(time.Millisecond))
	lastOK := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		err := cl.KeepAliveOnce(ctx, id)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, client.ErrLeaseNotFound):
			return explainLease(c, id, err)
		case err != nil && time.Since(lastOK) >= l.TTL:
			return fmt.Errorf("lease %d: no refresh succeeded for its whole TTL (%s), it has expired in all likelihood: %w",
				id, l.TTL, explain("keep lease alive", err))
		case err != nil:
			fmt.Fprintf(c.App.ErrWriter, "refresh of lease %d failed, retrying: %v\n", id, err)
		default:
			lastOK = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func explainLease(c *cli.Context, id int64, err error) error {
	if errors.Is(err, client.ErrLeaseNotFound) {
		return fmt.Errorf("lease %d not found: it expired or was revoked; grant a new one with '%s'", id, hint(c, "lease grant", "TTL"))
	}
	return explain(fmt.Sprintf("keep lease %d alive", id), err)
}
