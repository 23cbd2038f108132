package api

import (
	"fmt"
	"sync"
	"time"
)

const (
	// uiPeerWait is how long a summary waits for its peers' fresh answers
	// before it shows the latest ones they gave.
	uiPeerWait = 150 * time.Millisecond
	// uiPeerStale is the age past which a peer's latest answer is shown as
	// no answer.
	uiPeerStale = 5 * time.Second
)

// peerAsks keeps every peer's latest summary, asked in the background with
// at most one request in flight per peer, so a slow or dead peer never
// holds up a tick and never piles up requests.
type peerAsks struct {
	mu      sync.Mutex
	last    map[uint64]peerAnswer
	pending map[uint64]chan struct{}
}

type peerAnswer struct {
	p  uiPeer
	at time.Time
}

// ask starts fn for peer id unless one is in flight, and returns a channel
// closed when that ask ends.
func (a *peerAsks) ask(id uint64, fn func() uiPeer) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch, ok := a.pending[id]; ok {
		return ch
	}
	if a.pending == nil {
		a.pending, a.last = map[uint64]chan struct{}{}, map[uint64]peerAnswer{}
	}
	ch := make(chan struct{})
	a.pending[id] = ch
	go func() {
		p := fn()
		a.mu.Lock()
		a.last[id] = peerAnswer{p: p, at: time.Now()}
		delete(a.pending, id)
		a.mu.Unlock()
		close(ch)
	}()
	return ch
}

// latest is p (the peer's current membership fields) with the peer's
// latest answer, or why there is none.
func (a *peerAsks) latest(p uiPeer, now time.Time) uiPeer {
	a.mu.Lock()
	ans, ok := a.last[p.ID]
	a.mu.Unlock()
	switch {
	case !ok:
		p.Error = "no answer yet"
		return p
	case now.Sub(ans.at) > uiPeerStale:
		p.Error = fmt.Sprintf("no answer for %s", now.Sub(ans.at).Round(time.Second))
		return p
	}
	got := ans.p
	got.Address, got.HTTPAddress, got.Voter = p.Address, p.HTTPAddress, p.Voter
	return got
}
