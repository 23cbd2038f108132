package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// slowLog prints every operation that took longer than over, with the
// wall time it started at, so that a tail can be told apart from a
// periodic stall (slow operations a fixed period apart: docs/PERFORMANCE.md,
// "a disk that stalls every 100 ms"). A nil *slowLog, or one with over 0,
// prints nothing.
type slowLog struct {
	over time.Duration
	mu   sync.Mutex
	w    io.Writer
}

func newSlowLog(w io.Writer, over time.Duration) *slowLog {
	if over <= 0 {
		return nil
	}
	return &slowLog{over: over, w: w}
}

// note records one operation, what, that started at start and took d.
func (l *slowLog) note(what string, start time.Time, d time.Duration) {
	if l == nil || d <= l.over {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "slow %s %s %.3fms\n", start.UTC().Format("15:04:05.000"), what, msOf(d))
}
