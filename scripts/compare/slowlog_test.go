package main

import (
	"bytes"
	"testing"
	"time"
)

func TestSlowLogPrintsOnlyWhatIsOverItsMark(t *testing.T) {
	var b bytes.Buffer
	l := newSlowLog(&b, 3*time.Millisecond)
	at := time.Date(2026, 12, 7, 4, 3, 52, 664_000_000, time.UTC)
	l.note("corral setData", at, 2*time.Millisecond)
	l.note("corral setData", at, 3*time.Millisecond)
	l.note("corral setData", at, 11*time.Millisecond+500*time.Microsecond)
	if got, want := b.String(), "slow 04:03:52.664 corral setData 11.500ms\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var none *slowLog = newSlowLog(&b, 0)
	none.note("x", at, time.Hour) // nil: prints nothing, does not panic
	if b.Len() != len("slow 04:03:52.664 corral setData 11.500ms\n") {
		t.Fatalf("a log with no mark printed: %q", b.String())
	}
}
