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
