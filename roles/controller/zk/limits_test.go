package zk

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// TestQueueOverflowCloses: a client that does not read fills its queue;
// the next frame closes its connection instead of blocking the sender
// (Applied runs in the raft loop).
func TestQueueOverflowCloses(t *testing.T) {
	b := newFakeBackend()
	s, err := New(Config{Logger: testLogger(t), MaxQueuedFrames: 2}, b)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close() })
	c := newConn(s, server, 7)
	s.mu.Lock()
	s.conns[c.id] = c
	s.mu.Unlock()
	s.met.connections.Inc()
	c.writerOn.Store(true)
	go c.writeLoop()
	// Nobody reads client: the writer blocks on its first frame, two more
	// fill the queue, and the one after closes.
	start := time.Now()
	for i := 0; i < 10; i++ {
		c.sendEvent(jute.EventNodeDeleted, "/gone")
	}
	require.Less(t, time.Since(start), time.Second)
	// Closed, and forgotten (close unregisters after closing done).
	require.Eventually(t, func() bool { return s.Stats().Connections == 0 }, 5*time.Second, time.Millisecond)
	<-c.done
}

// TestWatchLimit: beyond MaxWatchesPerConn the connection ends.
func TestWatchLimit(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{MaxWatchesPerConn: 2})
	r := openRaw(t, s.Addr().String())
	var st jute.StatResponse
	require.Equal(t, jute.CodeOK, r.call(jute.OpExists, &jute.PathWatchRequest{Path: "/", Watch: true}, &st).Err)
	require.Equal(t, jute.CodeNoNode, r.call(jute.OpExists, &jute.PathWatchRequest{Path: "/a", Watch: true}, nil).Err)
	r.write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 9, Type: jute.OpExists}, &jute.PathWatchRequest{Path: "/b", Watch: true}))
	require.True(t, r.closed())
	require.Eventually(t, func() bool { return s.Stats().Watches == 0 }, 5*time.Second, time.Millisecond)
}

// TestReset: a snapshot install closes every connection; the session
// survives and resumes.
func TestReset(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	s.Reset()
	require.True(t, r.closed())
	r2 := dialRaw(t, s.Addr().String())
	resp := r2.handshake(jute.ConnectRequest{SessionID: r.sid, Passwd: r.pw})
	require.Equal(t, r.sid, resp.SessionID)
}
