package main

import (
	"strings"
	"testing"
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
