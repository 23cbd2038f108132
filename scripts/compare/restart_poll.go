package main

import (
	"context"
	"sync"
	"time"
)

// How compare restart finds the first read and write that succeed.

// pollResult is when the first attempt of firstSuccess succeeded.
type pollResult struct {
	after    time.Duration
	ok       bool
	attempts int
	lastErr  string
}

// firstSuccess starts try every interval, at most inFlight at once, each under its own timeout, until one succeeds or
// limit has passed since start. It returns when the first success came back, measured from start. Overlapping
// attempts: one stuck until its timeout on a node that is not ready (or in a client's reconnect backoff) must not
// delay noticing a node that became ready meanwhile.
// trace, if not nil, is told of every attempt: when it began and ended (since start) and its error.
func firstSuccess(start time.Time, interval, timeout, limit time.Duration, inFlight int, try func(context.Context) error,
	trace func(began, ended time.Duration, err error)) pollResult {
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(limit))
	defer cancel()
	var (
		mu   sync.Mutex
		res  pollResult
		wg   sync.WaitGroup
		once sync.Once
	)
	won := make(chan struct{})
	slots := make(chan struct{}, inFlight)
	tick := time.NewTicker(interval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-won:
			break loop
		case <-ctx.Done():
			break loop
		case slots <- struct{}{}:
		}
		res.attempts++
		wg.Go(func() {
			defer func() { <-slots }()
			began := time.Now()
			actx, acancel := context.WithTimeout(ctx, timeout)
			err := try(actx)
			acancel()
			now := time.Now()
			if trace != nil {
				trace(began.Sub(start), now.Sub(start), err)
			}
			if err == nil {
				once.Do(func() {
					mu.Lock()
					res.ok, res.after = true, now.Sub(start)
					mu.Unlock()
					close(won)
				})
				return
			}
			mu.Lock()
			if !res.ok && (ctx.Err() == nil || res.lastErr == "") {
				res.lastErr = err.Error()
			}
			mu.Unlock()
		})
		select {
		case <-won:
			break loop
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
	}
	cancel()
	// Every attempt's context is now done; an attempt that does not heed it must not hang the run.
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(timeout + 5*time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	if !res.ok {
		res.after = limit
	}
	return res
}
