package transport

import (
	"strconv"
	"sync"
	"time"
)

// duplicates notices two processes speaking as one controller: raft
// connections for the same node id from two addresses at once. A node
// dials from the UDP socket it listens on, so all of one process's
// connections come from one address, and a restarted node comes back from
// the same one. Two addresses mean a second process started with the same
// --node-id (and a certificate for it), which otherwise pre-votes forever
// while its peers reject it quietly. It is only reported: the certificate
// is valid, and which of the two is the impostor is the operator's call.
type duplicates struct {
	mu       sync.Mutex
	live     map[uint64]map[string]int // node id -> remote address -> open connections
	throttle LogThrottle
}

// add records a connection from node at addr and returns another address
// node has a live connection from ("" if none).
func (d *duplicates) add(node uint64, addr string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live == nil {
		d.live = map[uint64]map[string]int{}
	}
	if d.live[node] == nil {
		d.live[node] = map[string]int{}
	}
	d.live[node][addr]++
	for a := range d.live[node] {
		if a != addr {
			return a
		}
	}
	return ""
}

// remove forgets one connection from node at addr.
func (d *duplicates) remove(node uint64, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live[node][addr]--; d.live[node][addr] <= 0 {
		delete(d.live[node], addr)
	}
	if len(d.live[node]) == 0 {
		delete(d.live, node)
	}
}

// trackRaftPeer registers a raft connection from node at addr, warns once
// a minute when another address speaks as the same node, and returns the
// function that unregisters it.
func (q *QUIC) trackRaftPeer(node uint64, addr string) func() {
	if other := q.dups.add(node, addr); other != "" && q.dups.throttle.Due(strconv.FormatUint(node, 10), time.Now()) {
		q.log.Warn("two processes speak as one controller: a second one was started with the same --node-id "+
			"(and a certificate for it), or the node moved and its old connection has not closed yet; "+
			"stop the one that should not run: a node id belongs to one process (docs/OPERATIONS.md)",
			"node", node, "addresses", []string{other, addr})
	}
	return func() { q.dups.remove(node, addr) }
}
