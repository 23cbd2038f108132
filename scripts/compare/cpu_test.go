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
