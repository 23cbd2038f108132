package main

import (
	"os"
	"testing"
)

func TestParsePids(t *testing.T) {
	got, err := parsePids(" 12, 7 ,")
	if err != nil || len(got) != 2 || got[0] != 12 || got[1] != 7 {
		t.Fatalf("parsePids: %v, %v", got, err)
	}
	for _, bad := range []string{"x", "0", "-3", "1,,y"} {
		if _, err := parsePids(bad); err == nil {
			t.Errorf("parsePids(%q) accepted", bad)
		}
	}
}

func TestServersCPUCountsThisProcess(t *testing.T) {
	before := serversCPU([]int{os.Getpid()})
	x := 0
	for serversCPU([]int{os.Getpid()}) <= before { // at least one 10 ms tick of work
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
	if serversCPU([]int{1 << 30}) != 0 {
		t.Error("a pid that does not exist counts CPU")
	}
}

func TestCtxtSwitches(t *testing.T) {
	status := "Name:\tx\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\nvoluntary_ctxt_switches_x:\t1000\n"
	if got := ctxtSwitches(status); got != 127 {
		t.Fatalf("ctxtSwitches = %d, want 127", got)
	}
	if got := ctxtSwitches("garbage"); got != 0 {
		t.Fatalf("ctxtSwitches(garbage) = %d, want 0", got)
	}
}

func TestServersSwitchesCountsThisProcess(t *testing.T) {
	// A Go test binary has parked and woken its threads long before this
	// line: its count cannot be zero.
	if got := serversSwitches([]int{os.Getpid()}); got <= 0 {
		t.Fatalf("serversSwitches(self) = %d, want > 0", got)
	}
	if got := serversSwitches([]int{1 << 30}); got != 0 {
		t.Fatalf("a pid that does not exist counts %d switches", got)
	}
}
