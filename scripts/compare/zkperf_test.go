package main

import (
	"strings"
	"testing"
	"time"
)

// A bad -ops value is refused before anything is dialed.
func TestZKPerfRefusesUnknownOps(t *testing.T) {
	err := runZKPerf([]string{"-corral", "127.0.0.1:1", "-ops", "create delete", "-sessions", "0"})
	if err == nil || !strings.Contains(err.Error(), `-ops: want create, setData or getData, got "delete"`) {
		t.Fatalf("want the -ops error, got %v", err)
	}
}

// zkresume refuses what it cannot run before it dials anything.
func TestZKResumeRefusesBadFlags(t *testing.T) {
	for args, want := range map[string]string{
		"-others 127.0.0.1:2":                                       "-first and -others are required",
		"-first 127.0.0.1:1 -others 127.0.0.1:2":                    "-pid: want the process id",
		"-first 127.0.0.1:1 -others 127.0.0.1:2 -pid 1 -sessions 0": "-sessions: want 1 to 100000",
	} {
		err := runZKResume(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want %q, got %v", args, want, err)
		}
	}
}

// The cost table pools the rounds: totals over totals, not a mean of
// per-run ratios.
func TestPrintCostTablePools(t *testing.T) {
	cfg := zkPerfConfig{systems: []zkSystem{{Name: "corral"}}, ops: []string{"setData"}, clients: []int{16}}
	runs := []*opRun{
		{System: "corral", Op: "setData", Clients: 16, Ops: 1000, ServerCPUMS: 500, ServerSwitches: 10000},
		{System: "corral", Op: "setData", Clients: 16, Ops: 3000, ServerCPUMS: 900, ServerSwitches: 30000},
		{System: "corral", Op: "setData", Clients: 1, Ops: 10, ServerCPUMS: 1000, ServerSwitches: 1},
	}
	var b strings.Builder
	printCostTable(&b, cfg, runs)
	if want := "| setData | 16 | 0.350 | 10.0 |"; !strings.Contains(b.String(), want) {
		t.Fatalf("want the row %q in:\n%s", want, b.String())
	}
	if cpu, sw := (&opRun{}).perOp(); cpu != 0 || sw != 0 {
		t.Fatalf("a run without ops costs %v ms and %v switches per op", cpu, sw)
	}
}

// With more than one round the op table comes again without round 1,
// where ZooKeeper's JVM is cold.
func TestPrintOpTablesLeaveOutTheColdRound(t *testing.T) {
	cfg := zkPerfConfig{systems: []zkSystem{{Name: "corral"}}, ops: []string{"setData"}, clients: []int{16}, rounds: 2, duration: time.Second}
	ms := func(n int) []time.Duration { return []time.Duration{time.Duration(n) * time.Millisecond} }
	// Round 1: three ops at 1 ms; round 2: one at 3 ms. Pooled: 2 ops/s,
	// p50 1 ms; warm: 1 op/s, p50 3 ms.
	runs := []*opRun{
		{System: "corral", Op: "setData", Clients: 16, Round: 1, Seconds: 1, lat: append(append(ms(1), ms(1)...), ms(1)...)},
		{System: "corral", Op: "setData", Clients: 16, Round: 2, Seconds: 1, lat: ms(3)},
	}
	var b strings.Builder
	printOpTables(&b, cfg, runs)
	out := b.String()
	warm := strings.Index(out, "rounds 2-2 pooled, every system warm")
	if !strings.Contains(out, "2 rounds pooled") || warm < 0 || !strings.Contains(out[:warm], "| setData | 16 | 2 | 1.00 | 3.00 |") {
		t.Fatalf("want a pooled table and a warm one:\n%s", out)
	}
	if row := "| setData | 16 | 1 | 3.00 | 3.00 |"; !strings.Contains(out[warm:], row) {
		t.Fatalf("want the warm row %q (round 2 only) in:\n%s", row, out[warm:])
	}
	cfg.rounds = 1
	b.Reset()
	printOpTables(&b, cfg, runs[:1])
	if strings.Contains(b.String(), "warm") {
		t.Fatalf("one round printed a warm table:\n%s", b.String())
	}
}
