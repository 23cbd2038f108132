package bench

// `corral bench kv --kill-leader-every`: the writes' side of a failover. The
// leader is killed (SIGKILL) and restarted on the same schedule as bench
// workers' (leaderKiller), while the clients keep writing; for each kill the
// report gives the longest gap between two acknowledged writes from the kill
// until the next one. That gap is what a client sees: detection, election,
// the new leader's first commit and the client's own retry.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// writeGap is the longest silence between acknowledged writes in one kill's window.
type writeGap struct {
	kill     killRecord
	gap      time.Duration
	from, to time.Time // the acknowledgements around the gap
	resumed  bool      // some write was acknowledged after the kill, before the window closed
}

// writeGaps finds, for each kill, the longest gap between consecutive acknowledgements (acks, ascending) from the
// last acknowledgement before the kill until the next kill (or end). A window with no acknowledgement after the kill
// reports the gap until end.
func writeGaps(kills []killRecord, acks []time.Time, end time.Time) []writeGap {
	out := make([]writeGap, 0, len(kills))
	for i, k := range kills {
		until := end
		if i+1 < len(kills) {
			until = kills[i+1].at
		}
		// The last ack before the kill opens the window.
		first, _ := slices.BinarySearchFunc(acks, k.at, func(a, t time.Time) int { return a.Compare(t) })
		prev := k.at
		if first > 0 {
			prev = acks[first-1]
		}
		g := writeGap{kill: k}
		for _, a := range acks[first:] {
			if !a.Before(until) {
				break
			}
			g.resumed = true
			if d := a.Sub(prev); d > g.gap {
				g.gap, g.from, g.to = d, prev, a
			}
			prev = a
		}
		if !g.resumed {
			g.gap, g.from, g.to = until.Sub(prev), prev, until
		}
		out = append(out, g)
	}
	return out
}

// printWriteGaps prints one line per kill and the median and maximum gap.
func printWriteGaps(w io.Writer, gaps []writeGap, t0 time.Time) error {
	fmt.Fprintln(w, "failover: longest gap between acknowledged writes, from the last write before each SIGKILL until the next kill")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "KILL\tAT\tLEADER\tNEW LEADER\tGAP\t")
	var all []time.Duration
	for _, g := range gaps {
		gap := g.gap.Round(time.Millisecond).String()
		if !g.resumed {
			gap = "> " + gap + " (no write acknowledged after the kill)"
		}
		fmt.Fprintf(tw, "%d\t+%s\t%d\t%d\t%s\t\n", g.kill.n, g.kill.at.Sub(t0).Round(100*time.Millisecond),
			g.kill.leaderID, g.kill.newLeader, gap)
		all = append(all, g.gap)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(all) > 0 {
		slices.Sort(all)
		fmt.Fprintf(w, "write gap over %d kills: median %s, max %s\n", len(all), median(all).Round(time.Millisecond),
			all[len(all)-1].Round(time.Millisecond))
	}
	return nil
}

// median of an ascending slice (the mean of the middle two for an even count).
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// runKVFailover runs the put op while a leaderKiller kills the leader on schedule, then reports the gaps.
func (e Env) runKVFailover(ctx context.Context, c *cli.Context, cfg failoverConfig, run func() opResult) (opResult, error) {
	k := e.newLeaderKiller(c, cfg)
	lead, err := e.findLeader(ctx, c)
	if err != nil {
		return opResult{}, err
	}
	if err := checkKillable(lead); err != nil {
		return opResult{}, err
	}
	t0 := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.killAll(ctx, t0)
	}()
	r := run()
	<-done
	out := k.out
	acks := slices.Clone(r.acks)
	slices.SortFunc(acks, func(a, b time.Time) int { return a.Compare(b) })
	if err := printWriteGaps(out, writeGaps(k.kills, acks, t0.Add(r.elapsed)), t0); err != nil {
		return r, err
	}
	return r, k.err
}
