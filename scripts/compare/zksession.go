package main

// A minimal ZooKeeper session client for the sessions phase of "compare zk"
// (zkperf.go): go-zookeeper's Conn keeps a 1.5 MiB receive buffer and
// several goroutines per session, too much for 10,000 sessions in one
// process. This one speaks just enough of the protocol (jute, from this
// checkout): connect, create one ephemeral znode, ping, closeSession.

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// rawSession is one session over one TCP connection.
type rawSession struct {
	nc       *net.TCPConn
	timeout  time.Duration // negotiated
	wmu      sync.Mutex    // writes
	pingSent atomic.Int64  // unix nanos of the outstanding ping, 0 if none
	lastSent atomic.Int64  // unix nanos of the last request sent: the server's session clock starts there
	closing  atomic.Bool   // closed on purpose: a read error is not a loss
	lost     atomic.Int64  // unix nanos the connection broke unasked, 0 if not
	lostWhy  atomic.Value  // string
	done     chan struct{} // the reader returned
}

var worldACL = []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}

// dialSession connects to addr, opens a session asking for timeout and
// creates the ephemeral znode path in it.
func dialSession(addr string, timeout time.Duration, path string) (*rawSession, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	nc := c.(*net.TCPConn)
	fail := func(err error) (*rawSession, error) { _ = nc.Close(); return nil, err }
	_ = nc.SetDeadline(time.Now().Add(15 * time.Second))
	req := &jute.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), Passwd: make([]byte, jute.PasswordLen)}
	if _, err := nc.Write(jute.AppendFrame(nil, req)); err != nil {
		return fail(err)
	}
	fr := jute.NewFrameReader(nc, 1<<20)
	body, err := fr.ReadFrame()
	if err != nil {
		return fail(fmt.Errorf("connect response: %w", err))
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(body, &resp); err != nil {
		return fail(err)
	}
	if resp.SessionID == 0 {
		return fail(errors.New("server refused the session"))
	}
	create := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpCreate},
		&jute.CreateRequest{Path: path, ACL: worldACL, Flags: jute.FlagEphemeral})
	sentAt := time.Now().UnixNano()
	if _, err := nc.Write(create); err != nil {
		return fail(err)
	}
	for {
		body, err = fr.ReadFrame()
		if err != nil {
			return fail(fmt.Errorf("create reply: %w", err))
		}
		d := jute.NewDecoder(body)
		var h jute.ReplyHeader
		if err := h.Decode(d); err != nil {
			return fail(err)
		}
		if h.Xid != 1 {
			continue // a notification
		}
		if h.Err != 0 {
			return fail(fmt.Errorf("create %s: %w", path, h.Err))
		}
		break
	}
	_ = nc.SetDeadline(time.Time{})
	s := &rawSession{nc: nc, timeout: time.Duration(resp.TimeOut) * time.Millisecond, done: make(chan struct{})}
	s.lastSent.Store(sentAt)
	go s.read(fr)
	return s, nil
}

// read consumes replies: ping replies give rtt to record (when it is not
// nil); anything else is ignored until the connection ends.
func (s *rawSession) read(fr *jute.FrameReader) {
	defer close(s.done)
	for {
		body, err := fr.ReadFrame()
		if err != nil {
			if !s.closing.Load() {
				s.lostWhy.Store(err.Error())
				s.lost.Store(time.Now().UnixNano())
			}
			return
		}
		var h jute.ReplyHeader
		if jute.Decode(body, &h) != nil {
			continue
		}
		if h.Xid == jute.XidPing {
			if t := s.pingSent.Swap(0); t != 0 {
				pingRTTs.add(time.Duration(time.Now().UnixNano() - t))
			}
		}
	}
}

// ping sends one ping.
func (s *rawSession) ping() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	now := time.Now().UnixNano()
	s.pingSent.Store(now)
	s.lastSent.Store(now)
	_ = s.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := s.nc.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}))
	return err
}

// pingEvery pings every interval, the first after first, until stop closes
// or the connection ends.
func (s *rawSession) pingEvery(first, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.done:
			return
		case <-t.C:
			if s.ping() != nil {
				return
			}
			t.Reset(interval)
		}
	}
}

// abort closes the socket at once (RST, no closeSession): the server must
// expire the session.
func (s *rawSession) abort() {
	s.closing.Store(true)
	_ = s.nc.SetLinger(0)
	_ = s.nc.Close()
}

// closeSession ends the session properly and waits (up to limit) for the
// server to close the connection.
func (s *rawSession) closeSession(limit time.Duration) {
	s.closing.Store(true)
	s.wmu.Lock()
	_ = s.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = s.nc.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 2, Type: jute.OpCloseSession}))
	s.wmu.Unlock()
	select {
	case <-s.done:
	case <-time.After(limit):
	}
	_ = s.nc.Close()
	<-s.done
}

// rttLog collects ping round trips while on.
type rttLog struct {
	mu  sync.Mutex
	on  bool
	all []time.Duration
}

var pingRTTs rttLog

func (l *rttLog) add(d time.Duration) {
	l.mu.Lock()
	if l.on {
		l.all = append(l.all, d)
	}
	l.mu.Unlock()
}

// start clears the log and records from now on.
func (l *rttLog) start() {
	l.mu.Lock()
	l.on, l.all = true, nil
	l.mu.Unlock()
}

// stop ends recording and returns what was recorded.
func (l *rttLog) stop() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.all
}
