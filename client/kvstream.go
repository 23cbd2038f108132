package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// The KV stream (the default; Config.HTTPOnly turns it off): Put, CompareAndPut, Get and Delete travel
// as binary frames over one upgraded connection per endpoint, shared by
// every goroutine of the Client, many in flight and answered out of order
// (docs/API.md, "KV stream"). The failover rules are the HTTP calls':
// a stream that cannot be opened is a dial error (nothing was sent; try
// the next endpoint), a stream that breaks after a frame was written
// leaves that call's outcome unknown, and every answer's leader hint moves
// the next calls as LeaderHeader does.

const (
	// streamIdle closes a stream that carried nothing for this long before
	// it is used again, well before the controller's idle timeout (2 min by
	// default) would close it under a frame in flight.
	streamIdle = 60 * time.Second
	// streamWriteTimeout bounds one write of frames.
	streamWriteTimeout = 10 * time.Second
)

// streamNotSent marks an error that happened before a frame was written:
// like a dial error, it makes trying the next endpoint safe.
type streamNotSent struct{ error }

func (e streamNotSent) Unwrap() error { return e.error }

// streamPool holds the Client's streams, one per endpoint.
type streamPool struct {
	token string
	tls   *tls.Config // for https endpoints (Config.CACert); nil: system roots
	dial  net.Dialer

	mu      sync.Mutex
	conns   map[int]*kvConn
	dialing map[int]chan struct{}
	// plain are endpoints that did not serve the stream (a controller older
	// than it, or a proxy), until when: their calls go over HTTP meanwhile.
	plain map[int]time.Time
	// proxied are endpoints an environment proxy (HTTPS_PROXY, ...) applies
	// to: the stream never dials around it, so they get HTTP, through it.
	proxied map[int]bool
}

// plainFor is how long an endpoint that refused the stream gets HTTP
// before the client asks again (the controller may have been upgraded).
const plainFor = 30 * time.Second

// newStreamPool makes the pool for endpoints; proxy is the HTTP
// transport's (nil: none).
func newStreamPool(token string, tlsCfg *tls.Config, endpoints []string, proxy func(*http.Request) (*url.URL, error)) *streamPool {
	p := &streamPool{token: token, tls: tlsCfg, dial: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		conns: map[int]*kvConn{}, dialing: map[int]chan struct{}{}, plain: map[int]time.Time{}, proxied: map[int]bool{}}
	for i, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || proxy == nil {
			continue
		}
		if pu, err := proxy(&http.Request{URL: u}); err != nil || pu != nil {
			p.proxied[i] = true
		}
	}
	return p
}

// errNoStream says an endpoint does not serve the stream: use HTTP.
var errNoStream = errors.New("endpoint does not serve the KV stream")

// get returns endpoint idx's stream, opening one if it has none.
func (p *streamPool) get(ctx context.Context, idx int, ep string) (*kvConn, error) {
	for {
		p.mu.Lock()
		if p.proxied[idx] {
			p.mu.Unlock()
			return nil, errNoStream
		}
		if until, ok := p.plain[idx]; ok {
			if time.Now().Before(until) {
				p.mu.Unlock()
				return nil, errNoStream
			}
			delete(p.plain, idx)
		}
		if kc := p.conns[idx]; kc != nil {
			if kc.usable(time.Now()) {
				p.mu.Unlock()
				return kc, nil
			}
			delete(p.conns, idx)
			kc.fail(errors.New("KV stream idle for too long"))
		}
		wait, busy := p.dialing[idx]
		if !busy {
			done := make(chan struct{})
			p.dialing[idx] = done
			p.mu.Unlock()
			kc, err := p.open(ctx, ep)
			p.mu.Lock()
			delete(p.dialing, idx)
			close(done)
			switch {
			case errors.Is(err, errNoStream):
				p.plain[idx] = time.Now().Add(plainFor)
			case err == nil:
				p.conns[idx] = kc
				go kc.readLoop(func() { p.drop(idx, kc) })
			}
			p.mu.Unlock()
			return kc, err
		}
		p.mu.Unlock()
		select { // another caller is opening this endpoint's stream
		case <-wait:
		case <-ctx.Done():
			return nil, streamNotSent{ctx.Err()}
		}
	}
}

// drop forgets kc if it is still endpoint idx's stream.
func (p *streamPool) drop(idx int, kc *kvConn) {
	p.mu.Lock()
	if p.conns[idx] == kc {
		delete(p.conns, idx)
	}
	p.mu.Unlock()
}

// closeAll closes every stream.
func (p *streamPool) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[int]*kvConn{}
	p.mu.Unlock()
	for _, kc := range conns {
		kc.fail(errors.New("client closed"))
	}
}

// open dials ep and upgrades the connection. Its errors are dial errors,
// streamNotSent or the context's error; errNoStream when the endpoint
// answered the upgrade with anything but 101 (the call then goes over HTTP,
// whose answer says what is wrong if something is).
func (p *streamPool) open(ctx context.Context, ep string) (*kvConn, error) {
	u, err := url.Parse(ep)
	if err != nil {
		return nil, streamNotSent{err}
	}
	conn, _, err := dialAPI(ctx, &p.dial, u, p.tls)
	if err != nil {
		return nil, err
	}
	// The context's end interrupts the upgrade's write and read.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	kc, err := p.upgrade(conn, u.Host)
	if !stop() || err != nil {
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return kc, nil
}

// upgrade asks for the stream on conn.
func (p *streamPool) upgrade(conn net.Conn, host string) (*kvConn, error) {
	req := "GET /v1/kvstream HTTP/1.1\r\nHost: " + host + "\r\nConnection: Upgrade\r\nUpgrade: " + streamProtocol +
		"\r\n" + ClientHeader + ": " + ClientName + "\r\n"
	if p.token != "" {
		req += "Authorization: Bearer " + p.token + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return nil, streamNotSent{fmt.Errorf("ask %s for the KV stream: %w", host, err)}
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, streamNotSent{fmt.Errorf("ask %s for the KV stream: %w", host, err)}
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
		return nil, errNoStream
	}
	return &kvConn{conn: conn, br: br, pending: map[uint32]chan streamAnswer{}, used: time.Now()}, nil
}

// kvConn is one open stream.
type kvConn struct {
	conn net.Conn
	br   *bufio.Reader

	mu      sync.Mutex
	next    uint32
	pending map[uint32]chan streamAnswer
	out     []byte // frames waiting for the writer
	spare   []byte
	writing bool
	used    time.Time
	err     error // the stream is dead
}

// usable reports whether kc may take a new call at now.
func (kc *kvConn) usable(now time.Time) bool {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	return kc.err == nil && (len(kc.pending) > 0 || now.Sub(kc.used) < streamIdle)
}

// send queues sc's frame and writes the queue unless another caller is
// writing it: frames queued together leave in one write. It returns the
// frame's id and where its answer will come.
func (kc *kvConn) send(sc *streamCall) (uint32, chan streamAnswer, error) {
	ch := make(chan streamAnswer, 1)
	kc.mu.Lock()
	if kc.err != nil {
		err := kc.err
		kc.mu.Unlock()
		return 0, nil, streamNotSent{err}
	}
	kc.next++
	id := kc.next
	kc.pending[id] = ch
	kc.used = time.Now()
	kc.out = appendStreamRequest(kc.out, id, sc)
	if kc.writing {
		kc.mu.Unlock()
		return id, ch, nil
	}
	kc.writing = true
	for len(kc.out) > 0 && kc.err == nil {
		buf := kc.out
		kc.out = kc.spare[:0]
		kc.mu.Unlock()
		_ = kc.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, err := kc.conn.Write(buf)
		kc.mu.Lock()
		if cap(buf) <= 1<<20 {
			kc.spare = buf
		}
		if err != nil {
			kc.writing = false
			kc.mu.Unlock()
			kc.fail(fmt.Errorf("KV stream: write: %w", err))
			return id, ch, nil // ch gets the failure: the frame may have left in part
		}
	}
	kc.writing = false
	kc.mu.Unlock()
	return id, ch, nil
}

// forget drops the wait for id's answer (its caller gave up).
func (kc *kvConn) forget(id uint32) {
	kc.mu.Lock()
	delete(kc.pending, id)
	kc.mu.Unlock()
}

// fail ends the stream: every call waiting gets err.
func (kc *kvConn) fail(err error) {
	kc.mu.Lock()
	if kc.err != nil {
		kc.mu.Unlock()
		return
	}
	kc.err = err
	pending := kc.pending
	kc.pending = nil
	kc.out = nil
	kc.mu.Unlock()
	_ = kc.conn.Close()
	for _, ch := range pending {
		ch <- streamAnswer{err: err}
	}
}

// readLoop hands each answer to its caller until the stream ends; then it
// calls gone.
func (kc *kvConn) readLoop(gone func()) {
	defer gone()
	var l [4]byte
	for {
		if _, err := io.ReadFull(kc.br, l[:]); err != nil {
			kc.fail(fmt.Errorf("KV stream: read: %w", err))
			return
		}
		n := binary.BigEndian.Uint32(l[:])
		if n > maxStreamAnswer {
			kc.fail(fmt.Errorf("KV stream: a %d-byte answer is over the %d-byte limit", n, maxStreamAnswer))
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(kc.br, b); err != nil {
			kc.fail(fmt.Errorf("KV stream: read: %w", err))
			return
		}
		a, err := decodeStreamAnswer(b)
		if err != nil {
			kc.fail(err)
			return
		}
		kc.mu.Lock()
		ch := kc.pending[a.id]
		delete(kc.pending, a.id)
		kc.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// streamAttempt sends cl over endpoint idx's stream. handled is false when
// the endpoint does not serve the stream: the caller sends cl over HTTP.
func (c *Client) streamAttempt(ctx context.Context, idx int, cl call) (leader int, err error, handled bool) {
	leader = -1
	ep := c.endpoints[idx]
	var a streamAnswer
	for attempt := 0; ; attempt++ {
		kc, err := c.streams.get(ctx, idx, ep)
		if errors.Is(err, errNoStream) {
			return leader, nil, false
		}
		if err != nil {
			if ctx.Err() != nil {
				return leader, ctx.Err(), true
			}
			return leader, err, true
		}
		id, ch, err := kc.send(cl.stream)
		if err != nil {
			if attempt == 0 { // the stream died before this call used it: once more, on a new one
				continue
			}
			return leader, err, true
		}
		select {
		case a = <-ch:
		case <-ctx.Done():
			kc.forget(id)
			return leader, ctx.Err(), true
		}
		break
	}
	if a.err != nil {
		return leader, a.err, true // written, perhaps acted on: the outcome is unknown
	}
	leader = c.hintedEndpoint(a.hint)
	if a.status != http.StatusOK {
		return leader, decodeErrorBody(a.status, a.body), true
	}
	return leader, cl.stream.done(a.body), true
}
