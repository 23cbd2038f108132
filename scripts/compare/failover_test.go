package main

import (
	"errors"
	"testing"
	"time"
)

func TestWriteGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	kill, end := at(3000), at(8000)
	cases := []struct {
		name      string
		acks      []int
		gap, span time.Duration
		resumed   bool
	}{
		{"outage spans the kill", []int{2990, 2995, 3900, 3910, 7990}, 4080 * time.Millisecond, 905 * time.Millisecond, true},
		// An answer the old leader sent just before dying is read just after the kill: the outage follows it.
		{"outage after a late answer", []int{2995, 3002, 4000, 4010}, 998 * time.Millisecond, 7 * time.Millisecond, true},
		{"no write after the kill", []int{1000, 2900}, 5100 * time.Millisecond, 5100 * time.Millisecond, false},
		{"acks after the window do not count", []int{2900, 8100}, 5100 * time.Millisecond, 5100 * time.Millisecond, false},
	}
	for _, c := range cases {
		var acks []time.Time
		for _, ms := range c.acks {
			acks = append(acks, at(ms))
		}
		gap, span, resumed := writeGap(acks, kill, end)
		if gap != c.gap || span != c.span || resumed != c.resumed {
			t.Errorf("%s: got gap %s, span %s, resumed %v; want %s, %s, %v", c.name, gap, span, resumed, c.gap, c.span, c.resumed)
		}
	}
}

func TestHealthy(t *testing.T) {
	ok := []nodeStatus{{endpoint: "a", view: "1", leader: true}, {endpoint: "b", view: "1"}, {endpoint: "c", view: "1"}}
	if err := healthy(ok); err != nil {
		t.Errorf("healthy cluster: %v", err)
	}
	bad := map[string][]nodeStatus{
		"a node down":       {{endpoint: "a", view: "1", leader: true}, {endpoint: "b", view: "1"}, {endpoint: "c", err: errors.New("refused")}},
		"no leader known":   {{endpoint: "a", view: "1", leader: true}, {endpoint: "b", view: "1"}, {endpoint: "c"}},
		"two views":         {{endpoint: "a", view: "1", leader: true}, {endpoint: "b", view: "2", leader: true}, {endpoint: "c", view: "1"}},
		"nobody leads":      {{endpoint: "a", view: "1"}, {endpoint: "b", view: "1"}, {endpoint: "c", view: "1"}},
		"two say they lead": {{endpoint: "a", view: "q", leader: true}, {endpoint: "b", view: "q", leader: true}, {endpoint: "c", view: "q"}},
	}
	for name, st := range bad {
		if healthy(st) == nil {
			t.Errorf("%s: healthy, want an error", name)
		}
	}
}
