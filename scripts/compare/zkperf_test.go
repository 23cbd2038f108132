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
