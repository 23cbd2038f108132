package transport

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// MemNetwork connects in-process transports for tests. It models what a real
// network does to raft: partitions, isolated nodes, random loss and random
// per-message delay (which reorders messages). Loss, delay and partition
// decisions come from a rand seeded by NewMemNetwork; goroutine scheduling
// still varies, so runs are reproducible in distribution, not bit for bit.
//
// Like QUIC, a message that cannot be delivered because of a partition, an
// isolated node or a closed/unknown destination produces ReportUnreachable
// (and ReportSnapshot(Failure) for MsgSnap) at the sender; a randomly lost
// message is silent, except MsgSnap which reports Failure. A delivered MsgSnap
// reports Finish once the receiver's Process returns nil.
type MemNetwork struct {
	mu       sync.Mutex
	rng      *rand.Rand
	nodes    map[uint64]*memTransport
	groups   map[uint64]int // nil => no partition
	isolated map[uint64]bool
	dropRate float64
	minDelay time.Duration
	maxDelay time.Duration
	hold     func(from uint64, m *raftpb.Message) bool
	held     []heldMessage
}

// heldMessage is a message Hold kept back, with its sender.
type heldMessage struct {
	from *memTransport
	m    *raftpb.Message
}

// NewMemNetwork returns an empty network whose randomness derives from seed.
func NewMemNetwork(seed int64) *MemNetwork {
	return &MemNetwork{
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x636f7272616c)),
		nodes:    map[uint64]*memTransport{},
		isolated: map[uint64]bool{},
	}
}

// Transport returns node id's transport. While it is open, repeated calls
// return the same transport; after it is closed a new one is created (a
// restarted node), and messages addressed to id reach the new one.
func (n *MemNetwork) Transport(id uint64) Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t, ok := n.nodes[id]; ok && !t.isClosed() {
		return t
	}
	t := &memTransport{
		net:   n,
		id:    id,
		rep:   newReporter(),
		inbox: make(chan memDelivery, queueSize),
		peers: map[uint64]*memPeer{},
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	n.nodes[id] = t
	return t
}

// Partition splits the network: only nodes in the same group can talk. Nodes
// not listed in any group can talk to nobody. Replaces any earlier partition.
func (n *MemNetwork) Partition(groups ...[]uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groups = map[uint64]int{}
	for i, g := range groups {
		for _, id := range g {
			n.groups[id] = i
		}
	}
}

// Heal removes partitions and isolation (loss and delay settings stay).
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groups = nil
	clear(n.isolated)
}

// SetDropRate makes each message get lost with probability p (0..1).
func (n *MemNetwork) SetDropRate(p float64) {
	n.mu.Lock()
	n.dropRate = p
	n.mu.Unlock()
}

// SetDelay delays each message by a random duration in [min, max]; different
// delays reorder messages. 0, 0 delivers immediately (in order).
func (n *MemNetwork) SetDelay(min, max time.Duration) {
	if max < min {
		max = min
	}
	n.mu.Lock()
	n.minDelay, n.maxDelay = min, max
	n.mu.Unlock()
}

// Hold keeps back every message for which match returns true (nil: none)
// until ReleaseHeld, as a paused process keeps what is in its socket: the
// way to make one message arrive after the cluster moved on.
func (n *MemNetwork) Hold(match func(from uint64, m *raftpb.Message) bool) {
	n.mu.Lock()
	n.hold = match
	n.mu.Unlock()
}

// Held returns how many messages are held back.
func (n *MemNetwork) Held() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.held)
}

// ReleaseHeld stops holding and delivers the held messages in the order
// they were sent, under the partitions in force now.
func (n *MemNetwork) ReleaseHeld() {
	n.mu.Lock()
	held := n.held
	n.hold, n.held = nil, nil
	n.mu.Unlock()
	for _, h := range held {
		h.from.arrive(h.m.GetTo(), h.m)
	}
}

// holds keeps m back if the Hold filter wants it; m is already a clone.
func (n *MemNetwork) holds(from *memTransport, m *raftpb.Message) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hold == nil || !n.hold(from.id, m) {
		return false
	}
	n.held = append(n.held, heldMessage{from: from, m: m})
	return true
}

// Isolate cuts id off from every other node until Heal.
func (n *MemNetwork) Isolate(id uint64) {
	n.mu.Lock()
	n.isolated[id] = true
	n.mu.Unlock()
}

// canTalkLocked reports whether a and b are connected; n.mu must be held.
func (n *MemNetwork) canTalkLocked(a, b uint64) bool {
	if n.isolated[a] || n.isolated[b] {
		return false
	}
	if n.groups == nil {
		return true
	}
	ga, oka := n.groups[a]
	gb, okb := n.groups[b]
	return oka && okb && ga == gb
}

// destination returns the open transport for to if from can reach it.
func (n *MemNetwork) destination(from, to uint64) *memTransport {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.nodes[to]
	if t == nil || t.isClosed() || !n.canTalkLocked(from, to) {
		return nil
	}
	return t
}

// fate decides, under the seeded rand, whether a message is lost and how long
// it is delayed.
func (n *MemNetwork) fate() (lost bool, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	lost = n.dropRate > 0 && n.rng.Float64() < n.dropRate
	delay = n.minDelay
	if span := n.maxDelay - n.minDelay; span > 0 {
		delay += time.Duration(n.rng.Int64N(int64(span) + 1))
	}
	return lost, delay
}

type memPeer struct{ lastContact time.Time }

type memDelivery struct {
	m    *raftpb.Message
	from *memTransport
}

type memTransport struct {
	net    *MemNetwork
	id     uint64
	rep    *reporter
	inbox  chan memDelivery
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	handler Handler
	started bool
	closed  bool
	peers   map[uint64]*memPeer
}

func (t *memTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

func (t *memTransport) Start(h Handler) error {
	if h == nil {
		return errors.New("start transport: nil handler")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("start transport: already closed")
	}
	if t.started {
		return errors.New("start transport: already started")
	}
	t.started, t.handler = true, h
	t.wg.Go(func() { t.rep.run(h, t.ctx.Done()) })
	t.wg.Go(t.deliverLoop)
	return nil
}

// Send clones each message (the receiver must not share memory with the
// sender's raft log, as over a real wire) and schedules its delivery.
func (t *memTransport) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		to, snap := m.GetTo(), m.GetType() == raftpb.MsgSnap
		t.mu.Lock()
		_, known := t.peers[to]
		closed := t.closed
		t.mu.Unlock()
		if closed {
			return
		}
		if !known {
			if snap {
				t.rep.reportSnapshot(to, raft.SnapshotFailure)
			}
			continue
		}
		if t.net.destination(t.id, to) == nil {
			t.undeliverable(to, snap)
			continue
		}
		lost, delay := t.net.fate()
		if lost {
			if snap {
				t.rep.reportSnapshot(to, raft.SnapshotFailure)
			}
			continue
		}
		c := proto.Clone(m).(*raftpb.Message)
		if t.net.holds(t, c) {
			continue
		}
		if delay <= 0 {
			t.arrive(to, c)
		} else {
			time.AfterFunc(delay, func() { t.arrive(to, c) })
		}
	}
}

// undeliverable tells the sender's raft, as a real transport would.
func (t *memTransport) undeliverable(to uint64, snap bool) {
	t.rep.reportUnreachable(to)
	if snap {
		t.rep.reportSnapshot(to, raft.SnapshotFailure)
	}
}

// arrive re-checks reachability at delivery time (a partition created while a
// message is "in flight" drops it) and enqueues without blocking.
func (t *memTransport) arrive(to uint64, m *raftpb.Message) {
	dst := t.net.destination(t.id, to)
	if dst == nil {
		t.undeliverable(to, m.GetType() == raftpb.MsgSnap)
		return
	}
	select {
	case dst.inbox <- memDelivery{m: m, from: t}:
	default:
		t.undeliverable(to, m.GetType() == raftpb.MsgSnap)
	}
}

func (t *memTransport) deliverLoop() {
	for {
		select {
		case <-t.ctx.Done():
			return
		case d := <-t.inbox:
			t.touch(d.from.id)
			d.from.touch(t.id)
			err := t.handler.Process(t.ctx, d.m)
			if d.m.GetType() == raftpb.MsgSnap {
				st := raft.SnapshotFinish
				if err != nil {
					st = raft.SnapshotFailure
				}
				d.from.rep.reportSnapshot(t.id, st)
			}
		}
	}
}

func (t *memTransport) touch(peer uint64) {
	t.mu.Lock()
	if p, ok := t.peers[peer]; ok {
		p.lastContact = time.Now()
	}
	t.mu.Unlock()
}

// AddPeer registers id; the address is irrelevant in memory.
func (t *memTransport) AddPeer(id uint64, _ string) {
	if id == t.id {
		return
	}
	t.mu.Lock()
	if _, ok := t.peers[id]; !ok {
		t.peers[id] = &memPeer{}
	}
	t.mu.Unlock()
}

func (t *memTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	delete(t.peers, id)
	t.mu.Unlock()
}

// PeerStatus: Connected means the peer is currently reachable through the
// network; RTT is the mean configured round trip (2 x mean delay).
func (t *memTransport) PeerStatus(id uint64) PeerStatus {
	t.mu.Lock()
	p, ok := t.peers[id]
	var last time.Time
	if ok {
		last = p.lastContact
	}
	t.mu.Unlock()
	if !ok {
		return PeerStatus{}
	}
	t.net.mu.Lock()
	rtt := t.net.minDelay + t.net.maxDelay
	t.net.mu.Unlock()
	return PeerStatus{Connected: t.net.destination(t.id, id) != nil, LastContact: last, RTT: rtt}
}

// Close stops delivery; messages still addressed to this node are dropped.
func (t *memTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	t.net.ReportGone(t.id)
	return nil
}

// ReportGone tells the nodes that can reach id that its process ended, as
// the liveness link of the QUIC transport does (liveness.go), and as a
// closed transport does by itself. A node cut off from id by a partition
// would not see its connection close, and is not told. With to, only those
// nodes are told: a test calls it on a live node to stand for a mistaken
// or forged report.
func (n *MemNetwork) ReportGone(id uint64, to ...uint64) {
	n.mu.Lock()
	var hs []PeerGoneHandler
	for other, t := range n.nodes {
		if other == id || !n.canTalkLocked(id, other) || (len(to) > 0 && !slices.Contains(to, other)) {
			continue
		}
		t.mu.Lock()
		if g, ok := t.handler.(PeerGoneHandler); ok && !t.closed {
			hs = append(hs, g)
		}
		t.mu.Unlock()
	}
	n.mu.Unlock()
	for _, g := range hs {
		g.PeerGone(id)
	}
}
