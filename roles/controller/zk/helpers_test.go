package zk

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startServer serves cfg over b on a loopback port.
func startServer(t testing.TB, b *fakeBackend, cfg Config) *Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = 2 * time.Second
	}
	s, err := New(cfg, b)
	require.NoError(t, err)
	b.attach(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	require.Eventually(t, func() bool { return s.Addr() != nil }, 5*time.Second, time.Millisecond)
	t.Cleanup(func() {
		b.detach(s)
		s.Close()
		<-done
	})
	return s
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...interface{}) {}

// connect opens a go-zookeeper session to the servers and waits for it.
func connect(t testing.TB, addrs ...string) (*gozk.Conn, <-chan gozk.Event) {
	t.Helper()
	c, ev, err := gozk.Connect(addrs, 4*time.Second, gozk.WithLogger(nopLogger{}), gozk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(func() { closeClient(t, c) })
	waitState(t, ev, gozk.StateHasSession)
	return c, ev
}

// closeClient closes c and waits until its connection goroutines are
// done: go-zookeeper's Close returns before they are, and one left reading
// a reply would run into the next test's time (a race there was reported
// against a later test). The state turns Disconnected after its send and
// receive loops have both returned, through an atomic store, so the wait
// also orders everything they did before whatever the test does next.
func closeClient(t testing.TB, c *gozk.Conn) {
	c.Close()
	require.Eventually(t, func() bool { return c.State() == gozk.StateDisconnected }, 10*time.Second, time.Millisecond,
		"the go-zookeeper client did not stop within 10s")
}

func waitState(t testing.TB, ev <-chan gozk.Event, want gozk.State) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v within 10s", want)
		}
	}
}

func waitEvent(t testing.TB, ch <-chan gozk.Event) gozk.Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return gozk.Event{}
}

// rawClient speaks jute directly, for what go-zookeeper lacks (addWatch,
// whoAmI, ...) and for hostile input.
type rawClient struct {
	t   testing.TB
	nc  net.Conn
	fr  *jute.FrameReader
	w   *bufio.Writer
	xid int32
	sid int64
	pw  []byte
	// events are the watch notifications read while waiting for replies.
	events []jute.WatcherEvent
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawClient{t: t, nc: nc, fr: jute.NewFrameReader(nc, 4<<20), w: bufio.NewWriter(nc)}
}

func (r *rawClient) write(b []byte) {
	_, err := r.nc.Write(b)
	require.NoError(r.t, err)
}

// handshake sends a ConnectRequest and returns the response.
func (r *rawClient) handshake(req jute.ConnectRequest) jute.ConnectResponse {
	r.t.Helper()
	if req.TimeOut == 0 {
		req.TimeOut = 4000
	}
	r.write(jute.AppendFrame(nil, &req))
	body, err := r.fr.ReadFrame()
	require.NoError(r.t, err)
	resp := jute.ConnectResponse{}
	require.NoError(r.t, jute.Decode(body, &resp))
	// The password aliases the frame reader's buffer, which the next frame reuses.
	r.sid, r.pw = resp.SessionID, bytes.Clone(resp.Passwd)
	return resp
}

func openRaw(t testing.TB, addr string) *rawClient {
	r := dialRaw(t, addr)
	resp := r.handshake(jute.ConnectRequest{})
	require.NotZero(t, resp.SessionID)
	return r
}

// call sends one request and decodes its reply into resp (if OK),
// collecting the watch events that come first.
func (r *rawClient) call(op jute.Op, req, resp jute.Record) jute.ReplyHeader {
	r.t.Helper()
	r.xid++
	xid := r.xid
	switch op {
	case jute.OpAuth:
		xid = jute.XidAuth
	case jute.OpSetWatches, jute.OpSetWatches2:
		xid = jute.XidSetWatches
	case jute.OpPing:
		xid = jute.XidPing
	}
	r.write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: xid, Type: op}, req))
	for {
		body, err := r.fr.ReadFrame()
		require.NoError(r.t, err)
		d := jute.NewDecoder(body)
		var h jute.ReplyHeader
		require.NoError(r.t, h.Decode(d))
		if h.Xid == jute.XidNotification {
			var ev jute.WatcherEvent
			require.NoError(r.t, ev.Decode(d))
			r.events = append(r.events, ev)
			continue
		}
		require.Equal(r.t, xid, h.Xid)
		if h.Err == jute.CodeOK && resp != nil {
			require.NoError(r.t, resp.Decode(d))
		}
		return h
	}
}

// nextEvent reads frames until a watch notification.
func (r *rawClient) nextEvent() jute.WatcherEvent {
	r.t.Helper()
	if len(r.events) > 0 {
		ev := r.events[0]
		r.events = r.events[1:]
		return ev
	}
	for {
		body, err := r.fr.ReadFrame()
		require.NoError(r.t, err)
		d := jute.NewDecoder(body)
		var h jute.ReplyHeader
		require.NoError(r.t, h.Decode(d))
		if h.Xid != jute.XidNotification {
			continue
		}
		var ev jute.WatcherEvent
		require.NoError(r.t, ev.Decode(d))
		return ev
	}
}

// closed reports whether the server closed the connection (EOF or reset
// within the deadline).
func (r *rawClient) closed() bool {
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, err := r.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return false
			}
			return true
		}
	}
}

var openACL = []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
