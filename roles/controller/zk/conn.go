package zk

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
	"github.com/corral-dev/corral/roles/controller/zk/watch"
)

// writeTimeout bounds one frame write: a client that stops reading is
// dropped rather than holding its queue forever.
const writeTimeout = 10 * time.Second

// conn is one client connection. The reader goroutine (serve) owns the
// handshake, the session fields and the request loop; the writer
// goroutine drains out. Anyone may queue a frame with send; the reader
// writes its replies itself when nothing is queued (reply).
type conn struct {
	srv    *Server
	nc     net.Conn
	id     watch.ConnID
	remote string

	out       chan []byte // nil frame: close after writing what came before
	queued    atomic.Int64
	done      chan struct{}
	closeOnce sync.Once
	writerOn  atomic.Bool
	// pending counts the frames queued and not yet written: a reply may
	// skip the queue only when it is zero, so it never overtakes a watch
	// event queued before it. wmu serialises writes to nc.
	pending atomic.Int64
	wmu     sync.Mutex

	// evMu guards holding and held: watch events kept back while a
	// request that sets a watch is answered (holdEvents).
	evMu    sync.Mutex
	holding bool
	held    [][]byte

	// Set once by the handshake, read by others after.
	sid     atomic.Int64
	timeout time.Duration

	// auth are the identities the session proved (ip at connect, digest
	// by setAuth); read by Applied's delivery check, so behind an atomic.
	auth atomic.Pointer[[]jute.ID]

	lastZxid int64 // reader only: the highest zxid sent in a reply header

	// owner names this connection in the log (metadata.ZNodeOrigin.Conn):
	// the session's writes carry it, and a resume here binds the session
	// to it. Random, so unique across controllers without coordination.
	owner uint64
}

func newConn(s *Server, nc net.Conn, id watch.ConnID) *conn {
	c := &conn{srv: s, nc: nc, id: id, remote: nc.RemoteAddr().String(),
		out: make(chan []byte, s.cfg.MaxQueuedFrames), done: make(chan struct{})}
	for c.owner == 0 {
		c.owner = rand.Uint64()
	}
	ids := []jute.ID{{Scheme: "ip", ID: remoteHost(nc)}}
	c.auth.Store(&ids)
	return c
}

func (c *conn) sessionID() int64 { return c.sid.Load() }

func (c *conn) authIDs() []jute.ID { return *c.auth.Load() }

// serve runs the connection until it ends, then cleans up.
func (c *conn) serve() {
	defer c.close("")
	defer func() {
		// Input never panics the decoder, but a server bug must cost one
		// connection, not the controller.
		if r := recover(); r != nil {
			c.srv.log.Error("zk: connection handler panicked", "remote", c.remote, "panic", r)
		}
	}()
	fr := jute.NewFrameReader(c.nc, c.srv.cfg.MaxRequestBytes)
	ok, err := c.handshake(fr)
	if err != nil {
		c.logEnd(err)
		return
	}
	if !ok {
		return
	}
	c.writerOn.Store(true)
	c.srv.wg.Add(1)
	go func() {
		defer c.srv.wg.Done()
		c.writeLoop()
	}()
	err = c.readLoop(fr)
	c.logEnd(err)
}

func (c *conn) logEnd(err error) {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.srv.log.Debug("zk: connection closed", "remote", c.remote, "session", hexID(c.sessionID()))
	case errors.Is(err, errFinished):
	default:
		c.srv.log.Warn("zk: connection closed", "remote", c.remote, "session", hexID(c.sessionID()), "err", err)
	}
}

// errFinished ends a connection the server chose to close after a last
// reply (closeSession, AuthFailed); it is not worth a log line.
var errFinished = errors.New("connection finished")

// readLoop reads and runs requests until an error, one at a time.
func (c *conn) readLoop(fr *jute.FrameReader) error {
	for {
		// A connection silent for its session timeout is dead: clients
		// ping at a third of it.
		c.nc.SetReadDeadline(time.Now().Add(c.timeout))
		frame, err := fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return errors.New("no request or ping within the session timeout")
			}
			return err
		}
		c.srv.met.received.Add(1)
		c.srv.keep.touch(c.sessionID())
		req, err := jute.DecodeRequest(frame)
		var unknown *jute.UnknownOpError
		if errors.As(err, &unknown) {
			// As ZooKeeper (UnimplementedRequestProcessor): answer
			// Unimplemented, then close the connection.
			c.srv.log.Warn("zk: unknown request type", "remote", c.remote, "op", int32(unknown.Op), "xid", req.Header.Xid)
			c.srv.met.requests.WithLabelValues("unknown").Inc()
			c.srv.met.refused.WithLabelValues("unknown_op").Inc()
			c.reply(req.Header.Xid, jute.CodeUnimplemented, nil)
			return c.finish()
		}
		if err != nil {
			c.srv.met.refused.WithLabelValues("malformed").Inc()
			return err
		}
		if err := c.handle(req); err != nil {
			return err
		}
	}
}

// writeLoop writes queued frames until the connection closes.
func (c *conn) writeLoop() {
	for {
		select {
		case <-c.done:
			return
		case b := <-c.out:
			if b == nil {
				c.close("")
				return
			}
			c.queued.Add(-int64(len(b)))
			c.wmu.Lock()
			err := c.write(b)
			c.pending.Add(-1) // before unlocking: a reply waiting on wmu may then go direct
			c.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// write writes one frame; the caller holds wmu. A failed write closes
// the connection.
func (c *conn) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.close("write: " + err.Error())
		return err
	}
	c.srv.met.sent.Add(1)
	return nil
}

// sendReply writes a reply from the reader goroutine. With nothing
// queued it writes the frame itself: handing every reply to the writer
// goroutine cost a goroutine switch per request. Otherwise the reply
// queues behind the frames before it. Watch events never take this path:
// they are queued from the raft loop's Applied, which must not block on a
// client's socket.
func (c *conn) sendReply(b []byte) {
	if c.writerOn.Load() {
		c.wmu.Lock()
		if c.pending.Load() == 0 {
			_ = c.write(b)
			c.wmu.Unlock()
			return
		}
		c.wmu.Unlock()
	}
	c.send(b)
}

// send queues one frame without blocking; a full queue closes the
// connection (its client reconnects and re-arms its watches).
func (c *conn) send(b []byte) bool {
	// Counted before it is queued: a reply that reads the state this
	// frame reports is sent after it (sendReply).
	c.pending.Add(1)
	if c.queued.Add(int64(len(b))) > c.srv.cfg.MaxQueuedBytes {
		c.queued.Add(-int64(len(b)))
		go c.close("outbound queue over its byte limit")
		return false
	}
	select {
	case <-c.done:
		return false
	case c.out <- b:
		return true
	default:
		c.queued.Add(-int64(len(b)))
		// Closing from here could run inside Applied: do it aside.
		go c.close("outbound queue full")
		return false
	}
}

// reply queues a reply header (zxid: this controller's applied index,
// never lower than a previous reply's) and body.
func (c *conn) reply(xid int32, code jute.Code, body jute.Record) {
	z := int64(c.srv.b.AppliedIndex())
	if z < c.lastZxid {
		z = c.lastZxid
	}
	c.lastZxid = z
	h := jute.ReplyHeader{Xid: xid, Zxid: z, Err: code}
	if code != jute.CodeOK {
		body = nil
		c.srv.met.errors.WithLabelValues(code.String()).Inc()
	}
	c.sendReply(jute.AppendFrame(nil, &h, body))
}

// sendEvent queues a watch notification (see Server.deliver).
func (c *conn) sendEvent(typ jute.EventType, path string) {
	h := jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1}
	ev := jute.WatcherEvent{Type: typ, State: jute.StateSyncConnected, Path: path}
	frame := jute.AppendFrame(nil, &h, &ev)
	c.evMu.Lock()
	defer c.evMu.Unlock()
	if c.holding {
		if len(c.held) >= c.srv.cfg.MaxQueuedFrames {
			go c.close("too many watch events held behind a reply")
			return
		}
		c.held = append(c.held, frame)
		return
	}
	if c.send(frame) {
		c.srv.met.watchEvents.Inc()
	}
}

// holdEvents makes sendEvent keep this connection's events until
// releaseEvents (see handle: a request that sets a watch).
func (c *conn) holdEvents() {
	c.evMu.Lock()
	c.holding = true
	c.evMu.Unlock()
}

// releaseEvents queues the held events, in order, after the reply the
// request queued, and stops holding.
func (c *conn) releaseEvents() {
	c.evMu.Lock()
	defer c.evMu.Unlock()
	c.holding = false
	for _, f := range c.held {
		if c.send(f) {
			c.srv.met.watchEvents.Inc()
		}
	}
	c.held = nil
}

// finish closes the connection once the frames queued so far are
// written (a last reply), or after a second.
func (c *conn) finish() error {
	if !c.writerOn.Load() {
		c.close("")
		return errFinished
	}
	select {
	case c.out <- nil:
	default:
		c.close("")
	}
	select {
	case <-c.done:
	case <-time.After(time.Second):
	}
	return errFinished
}

// close ends the connection at once (idempotent, never blocks).
func (c *conn) close(why string) {
	c.closeOnce.Do(func() {
		close(c.done)
		c.nc.Close()
		if why != "" {
			c.srv.log.Info("zk: closing connection", "remote", c.remote, "session", hexID(c.sessionID()), "reason", why)
		}
		c.srv.unregister(c)
	})
}
