package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// In-memory streams model what a partition does to a QUIC session: bytes
// written while two nodes cannot talk are held (QUIC retransmits them) and
// arrive if the partition heals in time; a session cut off for longer than
// the idle timeout dies, as QUIC's MaxIdleTimeout does. A close is seen by
// the other side only once it could hear about it. Loss and delay settings
// of the MemNetwork do not apply to streams (they are reliable).

// With SetStreamBackoff, a session also models QUIC's retransmission
// timer: it doubles each time it fires unanswered, so after bytes were
// lost to a partition the first packet after the heal leaves only when the
// timer next fires. The session stays stalled after the heal for about as
// long as the loss lasted (the doubling timer's next expiry lies between
// that and twice it). A session that wrote nothing while cut off is not
// stalled: QUIC sends new data at once.

// memStreamPoll is how often a blocked reader re-checks reachability.
const memStreamPoll = 5 * time.Millisecond

// memStreams is the stream side of one MemNetwork.
type memStreams struct {
	mu        sync.Mutex
	listeners map[string]*memStreamListener
	idle      time.Duration
	backoff   bool
}

// SetStreamBackoff makes sessions opened from now on stall after a
// partition heals for as long as bytes written to them were being lost,
// as QUIC's backed-off retransmission timer does (above).
func (n *MemNetwork) SetStreamBackoff(on bool) {
	ms := n.streams()
	ms.mu.Lock()
	ms.backoff = on
	ms.mu.Unlock()
}

// memStreamNets attaches stream state to a MemNetwork without widening its
// struct (tests create few networks; the entries live as long as the test
// binary).
var memStreamNets sync.Map // *MemNetwork -> *memStreams

func (n *MemNetwork) streams() *memStreams {
	v, _ := memStreamNets.LoadOrStore(n, &memStreams{listeners: map[string]*memStreamListener{}, idle: MaxIdleTimeout})
	return v.(*memStreams)
}

// SetStreamIdleTimeout sets how long an in-memory stream survives a
// partition before it dies (default: the idle timeout of a worker's QUIC
// connections, MaxIdleTimeout).
func (n *MemNetwork) SetStreamIdleTimeout(d time.Duration) {
	ms := n.streams()
	ms.mu.Lock()
	ms.idle = d
	ms.mu.Unlock()
}

func (n *MemNetwork) reachable(a, b uint64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.canTalkLocked(a, b)
}

// ListenStreams makes node id accept streams dialled to addr. Partitions
// and isolation apply between id and the dialer's id.
func (n *MemNetwork) ListenStreams(id uint64, addr string) (StreamListener, error) {
	ms := n.streams()
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if old := ms.listeners[addr]; old != nil && !old.isClosed() {
		return nil, fmt.Errorf("listen streams on %s: address in use", addr)
	}
	// The buffered channel is the accept backlog: a dial completes before
	// the server calls Accept, as with QUIC.
	l := &memStreamListener{ms: ms, id: id, addr: addr, ch: make(chan *memStream, 128), closed: make(chan struct{}),
		streams: map[*memStream]struct{}{}}
	ms.listeners[addr] = l
	return l, nil
}

// StreamDialer returns a dialer whose streams come from node id. Its
// streams name no certificate identity (Peer reports ok=false).
func (n *MemNetwork) StreamDialer(id uint64) StreamDialer {
	return &memStreamDialer{n: n, id: id, streams: map[*memStream]struct{}{}}
}

// StreamDialerAs is StreamDialer for a node holding a certificate that
// names who: the listener's streams report it as their Peer, as QUIC
// streams report the verified certificate's identity.
func (n *MemNetwork) StreamDialerAs(id uint64, who Identity) StreamDialer {
	return &memStreamDialer{n: n, id: id, who: who, hasWho: true, streams: map[*memStream]struct{}{}}
}

type memStreamListener struct {
	ms     *memStreams
	id     uint64
	addr   string
	ch     chan *memStream
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	streams map[*memStream]struct{}
}

func (l *memStreamListener) isClosed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

func (l *memStreamListener) Accept(ctx context.Context) (Stream, error) {
	select {
	case s := <-l.ch:
		return s, nil
	case <-l.closed:
		return nil, ErrListenerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *memStreamListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.ms.mu.Lock()
		if l.ms.listeners[l.addr] == l {
			delete(l.ms.listeners, l.addr)
		}
		l.ms.mu.Unlock()
		l.mu.Lock()
		streams := l.streams
		l.streams = nil
		l.mu.Unlock()
		for s := range streams {
			s.Close()
		}
	})
	return nil
}

func (l *memStreamListener) Addr() string { return l.addr }

type memStreamDialer struct {
	n      *MemNetwork
	id     uint64
	who    Identity
	hasWho bool

	mu      sync.Mutex
	closed  bool
	streams map[*memStream]struct{}
}

// DialStream connects like QUIC over a lossy network: no listener at addr
// fails at once (connection refused); a partition makes the dial wait
// until it heals or ctx ends.
func (d *memStreamDialer) DialStream(ctx context.Context, addr string) (Stream, error) {
	ms := d.n.streams()
	for {
		ms.mu.Lock()
		l, idle, backoff := ms.listeners[addr], ms.idle, ms.backoff
		ms.mu.Unlock()
		if l == nil || l.isClosed() {
			return nil, fmt.Errorf("dial %s: no listener (connection refused)", addr)
		}
		if d.n.reachable(d.id, l.id) {
			return d.connect(ctx, l, idle, backoff)
		}
		t := time.NewTimer(memStreamPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("dial %s: %w: %w", addr, ErrUnreachable, ctx.Err())
		case <-t.C:
		}
	}
}

func (d *memStreamDialer) connect(ctx context.Context, l *memStreamListener, idle time.Duration, backoff bool) (Stream, error) {
	sess := &memSession{n: d.n, ids: [2]uint64{d.id, l.id}, idle: idle, backoff: backoff}
	ab, ba := newMemPipe(), newMemPipe()
	client := &memStream{sess: sess, side: 0, in: ba, out: ab, remote: l.addr}
	server := &memStream{sess: sess, side: 1, in: ab, out: ba, remote: fmt.Sprintf("mem-node-%d", d.id),
		peer: d.who, hasPeer: d.hasWho}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errors.New("dial: dialer closed")
	}
	d.streams[client] = struct{}{}
	d.mu.Unlock()
	client.onClose = func() {
		d.mu.Lock()
		delete(d.streams, client)
		d.mu.Unlock()
	}
	// Set before the listener can see the stream: its Close closes every
	// stream it holds, from another goroutine.
	server.onClose = func() {
		l.mu.Lock()
		delete(l.streams, server)
		l.mu.Unlock()
	}
	l.mu.Lock()
	if l.streams == nil {
		l.mu.Unlock()
		client.Close()
		return nil, fmt.Errorf("dial %s: no listener (connection refused)", l.addr)
	}
	l.streams[server] = struct{}{}
	l.mu.Unlock()
	select {
	case l.ch <- server:
		return client, nil
	case <-l.closed:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	return nil, fmt.Errorf("dial %s: not accepted", l.addr)
}

func (d *memStreamDialer) Close() error {
	d.mu.Lock()
	d.closed = true
	streams := d.streams
	d.streams = map[*memStream]struct{}{}
	d.mu.Unlock()
	for s := range streams {
		s.Close()
	}
	return nil
}

// memSession is the shared state of the two ends of one stream.
type memSession struct {
	n       *MemNetwork
	ids     [2]uint64 // dialer, listener
	idle    time.Duration
	backoff bool // model QUIC's retransmission backoff (SetStreamBackoff)

	mu         sync.Mutex
	closed     [2]bool // closed by side i
	dead       error   // set when the idle timeout killed the session
	cutSince   time.Time
	lostSince  time.Time // first write lost to the current partition (backoff only)
	stallUntil time.Time // no delivery before, after a heal (backoff only)
}

// status reports whether the two sides can talk now, and kills the
// session when they have not been able to for longer than the idle timeout.
func (s *memSession) status() (reachable bool, dead error) {
	reachable = s.n.reachable(s.ids[0], s.ids[1])
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.dead != nil:
	case reachable:
		s.cutSince = time.Time{}
		now := time.Now()
		if !s.lostSince.IsZero() {
			s.stallUntil = now.Add(now.Sub(s.lostSince))
			s.lostSince = time.Time{}
		}
		reachable = !now.Before(s.stallUntil)
	case s.cutSince.IsZero():
		s.cutSince = time.Now()
	case time.Since(s.cutSince) > s.idle:
		s.dead = fmt.Errorf("in-memory stream: no network activity for %s: %w", s.idle, os.ErrDeadlineExceeded)
	}
	return reachable, s.dead
}

// noteLoss records a write that the network could not carry now: with
// backoff, its retransmissions back off until the heal (status).
func (s *memSession) noteLoss() {
	if !s.backoff || s.n.reachable(s.ids[0], s.ids[1]) {
		return // not lost, only stalled: it leaves with the next retransmission
	}
	s.mu.Lock()
	if s.lostSince.IsZero() {
		s.lostSince = time.Now()
	}
	s.mu.Unlock()
}

// memPipe is one direction of a session: an unbounded byte queue.
type memPipe struct {
	mu     sync.Mutex
	buf    []byte
	notify chan struct{}
}

func newMemPipe() *memPipe { return &memPipe{notify: make(chan struct{})} }

func (p *memPipe) signal() {
	close(p.notify)
	p.notify = make(chan struct{})
}

type memStream struct {
	sess    *memSession
	side    int
	in, out *memPipe
	remote  string
	peer    Identity
	hasPeer bool
	onClose func()
	once    sync.Once

	dlMu          sync.Mutex
	readDeadline  time.Time
	writeDeadline time.Time
}

func (s *memStream) RemoteAddr() string { return s.remote }

func (s *memStream) Peer() (Identity, bool) { return s.peer, s.hasPeer }

func (s *memStream) SetReadDeadline(t time.Time) error {
	s.dlMu.Lock()
	s.readDeadline = t
	s.dlMu.Unlock()
	s.in.mu.Lock()
	s.in.signal()
	s.in.mu.Unlock()
	return nil
}

func (s *memStream) SetWriteDeadline(t time.Time) error {
	s.dlMu.Lock()
	s.writeDeadline = t
	s.dlMu.Unlock()
	return nil
}

// closedState reports whether this side closed, and whether the other side
// closed and this side could have heard about it.
func (s *memStream) closedState(reachable bool) (local, remote bool) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	return s.sess.closed[s.side], s.sess.closed[1-s.side] && reachable
}

func (s *memStream) Read(p []byte) (int, error) {
	for {
		reachable, dead := s.sess.status()
		local, remote := s.closedState(reachable)
		switch {
		case local:
			return 0, net.ErrClosed
		case dead != nil:
			return 0, dead
		}
		s.in.mu.Lock()
		if reachable && len(s.in.buf) > 0 {
			n := copy(p, s.in.buf)
			s.in.buf = s.in.buf[n:]
			s.in.mu.Unlock()
			return n, nil
		}
		wake := s.in.notify
		s.in.mu.Unlock()
		if remote {
			return 0, io.EOF
		}
		s.dlMu.Lock()
		dl := s.readDeadline
		s.dlMu.Unlock()
		if !dl.IsZero() && !time.Now().Before(dl) {
			return 0, os.ErrDeadlineExceeded
		}
		t := time.NewTimer(memStreamPoll)
		select {
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *memStream) Write(p []byte) (int, error) {
	reachable, dead := s.sess.status()
	local, remote := s.closedState(reachable)
	switch {
	case local:
		return 0, net.ErrClosed
	case dead != nil:
		return 0, dead
	case remote:
		return 0, fmt.Errorf("in-memory stream: peer closed: %w", net.ErrClosed)
	}
	if !reachable {
		s.sess.noteLoss()
	}
	s.out.mu.Lock()
	s.out.buf = append(s.out.buf, p...)
	s.out.signal()
	s.out.mu.Unlock()
	return len(p), nil
}

func (s *memStream) Close() error {
	s.once.Do(func() {
		s.sess.mu.Lock()
		s.sess.closed[s.side] = true
		s.sess.mu.Unlock()
		for _, p := range []*memPipe{s.in, s.out} {
			p.mu.Lock()
			p.signal()
			p.mu.Unlock()
		}
		if s.onClose != nil {
			s.onClose()
		}
	})
	return nil
}
