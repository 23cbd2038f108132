package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGoalsFromThroughputLines(t *testing.T) {
	q := quietResult{Idle: 0.93, WaitMS: 1000, Quiet: true}
	ms := time.Millisecond
	lines := []string{
		"# a comment",
		"round-1 " + kvLine("corral", 128, 90000, 0, 9000, 12*ms, 40*ms, 90*ms, "    cpu/op: servers=130µs client=20µs", q),
		"round-1 " + kvLine("corral-http", 128, 60000, 0, 6000, 20*ms, 50*ms, 90*ms, "", q),
		"round-1 " + kvLine("etcd", 128, 50000, 0, 5000, 25*ms, 60*ms, 90*ms, "", q),
		"round-1 " + kvLine("zk", 128, 70000, 0, 7000, 18*ms, 50*ms, 90*ms, "", q), // 9000/7000 = 1.29
		"round-2 " + kvLine("corral", 128, 90000, 0, 8000, 12*ms, 40*ms, 90*ms, "", q),
		"round-2 " + kvLine("etcd", 128, 50000, 0, 5000, 25*ms, 60*ms, 90*ms, "", q),
		"round-2 " + kvLine("zk", 128, 70000, 0, 7000, 18*ms, 50*ms, 90*ms, "", q), // 8000/7000 = 1.14: missed
		"round-1 " + kvLine("corral", 1, 600, 0, 600, 1420*time.Microsecond, 7*ms, 9*ms, "", q),
		"round-1 " + kvLine("etcd", 1, 400, 0, 400, 1810*time.Microsecond, 7*ms, 9*ms, "", q), // p99 equal: met
		"stray stderr line",
	}
	runs, err := parseKVLines(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 9 {
		t.Fatalf("parsed %d runs, want 9: %+v", len(runs), runs)
	}
	if r := runs[0]; r.round != 1 || r.system != "corral" || r.clients != 128 || r.opsPerS != 9000 || r.p50 != 12*ms || r.p99 != 40*ms {
		t.Errorf("first run: %+v", r)
	}
	goals := kvGoals(runs)
	if g := goals[0]; g.met != 1 || g.of != 2 {
		t.Errorf("128 clients: met %d of %d, want 1 of 2: %v", g.met, g.of, g.evidence)
	}
	if g := goals[1]; g.of != 0 || g.verdict() != "not measured" {
		t.Errorf("16 clients: %d of %d, %q; want not measured", g.met, g.of, g.verdict())
	}
	if g := goals[2]; g.met != 1 || g.of != 1 {
		t.Errorf("1 client: met %d of %d, want 1 of 1: %v", g.met, g.of, g.evidence)
	}
	if _, err := parseKVLines(strings.NewReader("round-x corral clients=1 ops/s=1")); err == nil {
		t.Error("a bad round number parsed")
	}
}

func TestGoalsFromRestartJSON(t *testing.T) {
	res := restartResult{Keys: 1000000, Systems: []*restartRun{
		{System: "corral", BytesPerKey: 450, Trials: []restartTrial{
			{Trial: 1, ReadMS: 2400, ReadOK: true, WriteMS: 2500, WriteOK: true},
			{Trial: 2, ReadMS: 2900, ReadOK: true, WriteMS: 3100, WriteOK: true},
		}},
		{System: "etcd", BytesPerKey: 600, Trials: []restartTrial{{Trial: 1, ReadMS: 20000, ReadOK: true, WriteMS: 21000, WriteOK: true}}},
	}}
	g := restartGoals(res)
	if g[0].met != 1 || g[0].of != 2 || !strings.Contains(g[0].evidence[0], "etcd 20.00 / 21.00 s") {
		t.Errorf("restart: met %d of %d: %v", g[0].met, g[0].of, g[0].evidence)
	}
	if g[1].met != 1 || g[1].of != 1 {
		t.Errorf("memory: met %d of %d: %v", g[1].met, g[1].of, g[1].evidence)
	}
	// runGoals end to end on files.
	dir := t.TempDir()
	kv := filepath.Join(dir, "kv.log")
	if err := os.WriteFile(kv, []byte("nothing here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := runGoals([]string{"-throughput", kv}); err == nil {
		t.Error("a throughput file without result lines was accepted")
	}
	if err := runGoals(nil); err == nil {
		t.Error("no inputs accepted")
	}
}
