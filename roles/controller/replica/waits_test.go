package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// A waiter past its deadline gets ErrTimeout from the sweep, once; one
// before it, or without one, keeps waiting for its result.
func TestWaitRegistryExpiresPastDeadlines(t *testing.T) {
	var w waitRegistry
	w.init()
	now := time.Unix(1000, 0)
	past := w.register(1, now.Add(-time.Millisecond))
	future := w.register(2, now.Add(time.Second))
	never := w.register(3, time.Time{})
	if n := w.expire(now); n != 1 {
		t.Fatalf("expired %d waiters, want 1", n)
	}
	select {
	case res := <-past:
		if !errors.Is(res.Err, ErrTimeout) {
			t.Fatalf("expired waiter got %v, want ErrTimeout", res.Err)
		}
	default:
		t.Fatal("the waiter past its deadline got nothing")
	}
	if n := w.expire(now); n != 0 {
		t.Fatalf("a second sweep expired %d, want 0", n)
	}
	if !w.trigger(2, metadata.Result{Revision: 5}) || (<-future).Revision != 5 {
		t.Fatal("the waiter before its deadline did not get its result")
	}
	if n := w.expire(now.Add(time.Hour)); n != 0 || len(never) != 0 {
		t.Fatalf("a waiter without a deadline expired (%d)", n)
	}
	if w.trigger(1, metadata.Result{}) {
		t.Fatal("an expired waiter was still registered")
	}
}

// The batching loop leaves out a proposal whose caller gave up, by its
// context or by its deadline.
func TestQueuedProposalGivenUp(t *testing.T) {
	now := time.Unix(1000, 0)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		q    queuedProposal
		want bool
	}{
		{"waiting", queuedProposal{ctx: context.Background(), deadline: now.Add(time.Second)}, false},
		{"no deadline", queuedProposal{ctx: context.Background()}, false},
		{"past its deadline", queuedProposal{ctx: context.Background(), deadline: now.Add(-time.Second)}, true},
		{"ctx done", queuedProposal{ctx: done, deadline: now.Add(time.Second)}, true},
	} {
		if got := tc.q.givenUp(now); got != tc.want {
			t.Errorf("%s: givenUp %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := sweepEvery(5 * time.Second); got != 250*time.Millisecond {
		t.Errorf("sweepEvery(5s) = %v", got)
	}
	if got := sweepEvery(300 * time.Millisecond); got != 30*time.Millisecond {
		t.Errorf("sweepEvery(300ms) = %v", got)
	}
}
