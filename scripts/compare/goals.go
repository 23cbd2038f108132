package main

// compare goals: issue 21's goals checked against one run's figures, so
// that a claim about them is a command's output rather than arithmetic in
// a document (docs/PERFORMANCE.md, "Where the goals stand").
// scripts/compare.sh goals runs the throughput comparison and the
// restarts and calls it:
//
//	compare goals -throughput FILE [-restart FILE.json]...
//
// FILE is what the throughput comparison printed (lines "round-R SYSTEM
// clients=N ... ops/s=X p50=D p99=D ..."); each -restart is the JSON of a
// compare restart. It prints, per round and client count, corral's ratio
// to etcd and ZooKeeper, then every goal with the rounds or trials that
// met it, and exits 0 either way: a missed goal is a finding, not an error.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// kvRun is one line of the throughput comparison.
type kvRun struct {
	round, clients int
	system         string
	opsPerS        float64
	p50, p99       time.Duration
}

// parseKVLines reads the throughput comparison's result lines and skips
// everything else (comments, stderr noise).
func parseKVLines(r io.Reader) ([]kvRun, error) {
	var out []kvRun
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !strings.HasPrefix(f[0], "round-") || !strings.HasPrefix(f[2], "clients=") {
			continue
		}
		var run kvRun
		var err error
		if run.round, err = strconv.Atoi(strings.TrimPrefix(f[0], "round-")); err != nil {
			return nil, fmt.Errorf("%q: round: %w", sc.Text(), err)
		}
		run.system = f[1]
		for _, kv := range f[2:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			switch k {
			case "clients":
				run.clients, err = strconv.Atoi(v)
			case "ops/s":
				run.opsPerS, err = strconv.ParseFloat(v, 64)
			case "p50":
				run.p50, err = time.ParseDuration(v)
			case "p99":
				run.p99, err = time.ParseDuration(v)
			}
			if err != nil {
				return nil, fmt.Errorf("%q: %s: %w", sc.Text(), k, err)
			}
		}
		out = append(out, run)
	}
	return out, sc.Err()
}

// goal is one of issue 21's goals and how often it held.
type goal struct {
	name     string
	met, of  int
	evidence []string
}

func (g *goal) add(ok bool, evidence string) {
	g.of++
	if ok {
		g.met++
	}
	g.evidence = append(g.evidence, evidence)
}

func (g goal) verdict() string {
	switch {
	case g.of == 0:
		return "not measured"
	case g.met == g.of:
		return fmt.Sprintf("yes, %d of %d", g.met, g.of)
	default:
		return fmt.Sprintf("no: %d of %d", g.met, g.of)
	}
}

// kvGoals checks items 1 and 2 round by round: corral's Go client
// ("corral") against etcd and ZooKeeper in the same round.
func kvGoals(runs []kvRun) []goal {
	type key struct {
		round, clients int
		system         string
	}
	by := map[key]kvRun{}
	rounds := map[int]bool{}
	for _, r := range runs {
		by[key{r.round, r.clients, r.system}] = r
		rounds[r.round] = true
	}
	order := slices.Sorted(maps.Keys(rounds))
	// throughput adds one round's ratios at clients to g, met when corral
	// reaches vsEtcd times etcd's rate and vsZK times ZooKeeper's.
	throughput := func(g *goal, rd, clients int, vsEtcd, vsZK float64) {
		c, okc := by[key{rd, clients, "corral"}]
		e, oke := by[key{rd, clients, "etcd"}]
		z, okz := by[key{rd, clients, "zk"}]
		if okc && oke && okz && e.opsPerS > 0 && z.opsPerS > 0 {
			re, rz := c.opsPerS/e.opsPerS, c.opsPerS/z.opsPerS
			g.add(re >= vsEtcd && rz >= vsZK, fmt.Sprintf("round %d: %.2f× etcd, %.2f× ZooKeeper", rd, re, rz))
		}
	}
	g128 := goal{name: "KV puts, 128 clients: ≥ 1.5× etcd and ≥ 1.2× ZooKeeper"}
	g16 := goal{name: "KV puts, 16 clients: ≥ etcd and ≥ ZooKeeper"}
	g1 := goal{name: "KV, 1 client: p50 and p99 ≤ etcd's"}
	for _, rd := range order {
		throughput(&g128, rd, 128, 1.5, 1.2)
		throughput(&g16, rd, 16, 1, 1)
		c, okc := by[key{rd, 1, "corral"}]
		e, oke := by[key{rd, 1, "etcd"}]
		if okc && oke {
			g1.add(c.p50 <= e.p50 && c.p99 <= e.p99, fmt.Sprintf("round %d: p50 %s against %s, p99 %s against %s",
				rd, msText(c.p50), msText(e.p50), msText(c.p99), msText(e.p99)))
		}
	}
	return []goal{g128, g16, g1}
}

func msText(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// restartGoals checks items 3 and 4 in one compare restart's result:
// every trial of corral's restart under 3 s (at a million keys; other
// sizes are reported) and its bytes per key at most etcd's.
func restartGoals(res restartResult) []goal {
	var corral, etcd *restartRun
	for _, s := range res.Systems {
		switch s.System {
		case "corral":
			corral = s
		case "etcd":
			etcd = s
		}
	}
	name := fmt.Sprintf("restart with %d keys < 3 s to the first read and write", res.Keys)
	if res.Keys < 1000000 {
		name = fmt.Sprintf("restart with %d keys (reported; the goal is at 1,000,000)", res.Keys)
	}
	gr := goal{name: name}
	gm := goal{name: fmt.Sprintf("memory per key ≤ etcd's, %d keys", res.Keys)}
	if corral == nil {
		return []goal{gr, gm}
	}
	for _, t := range corral.Trials {
		if t.Error != "" {
			gr.add(false, fmt.Sprintf("trial %d failed: %s", t.Trial, t.Error))
			continue
		}
		worst := max(t.ReadMS, t.WriteMS)
		ok := t.ReadOK && t.WriteOK && worst < 3000
		ev := fmt.Sprintf("trial %d: read %.2f s, write %.2f s (%s)", t.Trial, t.ReadMS/1000, t.WriteMS/1000, t.Quiet)
		if etcd != nil {
			for _, et := range etcd.Trials {
				if et.Trial == t.Trial && et.Error == "" {
					ev += fmt.Sprintf("; etcd %.2f / %.2f s", et.ReadMS/1000, et.WriteMS/1000)
				}
			}
		}
		gr.add(ok, ev)
	}
	gs := goal{name: fmt.Sprintf("a snapshot does not push the p99 of %d writers above 100 ms, %d keys", corral.SnapWriters, res.Keys)}
	var marked []float64
	for _, w := range corral.SnapWindows {
		if w.Marked {
			marked = append(marked, w.P99MS)
		}
	}
	if len(marked) > 0 {
		gs.add(slices.Max(marked) <= 100, snapshotWindowsLine(corral.SnapWindows))
	}
	if etcd != nil && corral.Error == "" && etcd.Error == "" {
		gm.add(corral.BytesPerKey <= etcd.BytesPerKey, fmt.Sprintf("%.0f against etcd's %.0f bytes", corral.BytesPerKey, etcd.BytesPerKey))
	}
	if len(corral.SnapWindows) == 0 {
		return []goal{gr, gm}
	}
	return []goal{gr, gm, gs}
}

// restartResult is what compare restart writes with -json.
type restartResult struct {
	Keys    int           `json:"keys"`
	Systems []*restartRun `json:"systems"`
}

func runGoals(args []string) error {
	flags := flag.NewFlagSet("compare goals", flag.ContinueOnError)
	throughput := flags.String("throughput", "", "the throughput comparison's output")
	var restarts []string
	flags.Func("restart", "a compare restart JSON file (repeatable)", func(s string) error {
		restarts = append(restarts, s)
		return nil
	})
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *throughput == "" && len(restarts) == 0 {
		return errors.New("give -throughput FILE and/or -restart FILE.json")
	}
	var goals []goal
	if *throughput != "" {
		f, err := os.Open(*throughput)
		if err != nil {
			return err
		}
		runs, err := parseKVLines(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *throughput, err)
		}
		if len(runs) == 0 {
			return fmt.Errorf("%s: no result lines (round-N SYSTEM clients=...)", *throughput)
		}
		goals = append(goals, kvGoals(runs)...)
	}
	for _, p := range restarts {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var res restartResult
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		goals = append(goals, restartGoals(res)...)
	}
	fmt.Println("| goal | met? | figures |")
	fmt.Println("|---|---|---|")
	for _, g := range goals {
		fmt.Printf("| %s | %s | %s |\n", g.name, g.verdict(), strings.Join(g.evidence, "; "))
	}
	return nil
}
