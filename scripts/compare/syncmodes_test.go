package main

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestSyncRun_EveryModeSyncsEveryAppendAndLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	for _, m := range syncModes {
		d, err := syncRun(dir, m, 2, 5, 100, 500, 0, nil)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if len(d) != 10 || !slices.IsSorted(d) {
			t.Errorf("%s: %d durations (want 10, sorted): %v", m.name, len(d), d)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("files left behind: %v", left)
	}
}

func TestRunSyncModes_RefusesOutOfRangeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-syncs", "0"}, {"-record", "70000"}, {"-rounds", "21"}, {"-writers", "1,x"}, {"-writers", "17"},
	} {
		if err := runSyncModes(append(args, "-dir", t.TempDir())); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if err := runSyncModes([]string{"-dir", t.TempDir(), "-writers", "1", "-syncs", "3", "-rounds", "1", "-gap", "0s"}); err != nil {
		t.Error(err)
	}
}
