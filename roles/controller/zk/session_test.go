package zk

import (
	"context"
	"errors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// TestSessionExpiry: the leader expires a session; its ephemerals go
// (watchers see NodeDeleted), its connection closes at the next
// keep-alive, and its client learns the session expired on reconnect.
func TestSessionExpiry(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	c1, ev1 := connect(t, s.Addr().String())
	c2, _ := connect(t, s.Addr().String())
	_, err := c1.Create("/eph", nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	_, _, ch, err := c2.GetW("/eph")
	require.NoError(t, err)

	// Time passes on the lessor's clock beyond the TTL without a
	// keep-alive reaching it for c1: make c2's keep-alive fresh after.
	b.advance(time.Hour)
	require.Contains(t, b.expire(), c1.SessionID())
	require.Equal(t, gozk.EventNodeDeleted, waitEvent(t, ch).Type)

	waitState(t, ev1, gozk.StateExpired)
	require.Eventually(t, func() bool { return s.Stats().Sessions <= 1 }, 10*time.Second, time.Millisecond)
	require.Empty(t, b.st.EphemeralsOf(c1.SessionID()))
}

// TestKeepAlive: pings keep a session's lease fresh through one batched
// KeepAlive call per interval.
func TestKeepAlive(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{MinSessionTimeout: 600 * time.Millisecond})
	require.Equal(t, 100*time.Millisecond, s.keepAliveInterval())
	c, _ := connect(t, s.Addr().String())
	id := c.SessionID()
	// Move the clock on by 4.5s, beyond the TTL (4s), in three steps; the client's
	// pings (every third of its timeout) keep pushing the deadline on.
	for i := 0; i < 3; i++ {
		b.advance(1500 * time.Millisecond)
		require.Eventually(t, func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.deadlines[id].After(b.Now().Add(3 * time.Second))
		}, 10*time.Second, time.Millisecond)
	}
	require.Empty(t, b.expire())
	_, ok := b.st.Lease(id)
	require.True(t, ok)
}

// TestReconnectOtherServer: a client whose server goes away resumes its
// session on another controller's server over the same cluster; its
// ephemerals stay and its watches are re-armed with setWatches.
func TestReconnectOtherServer(t *testing.T) {
	b := newFakeBackend()
	s1 := startServer(t, b, Config{})
	s2 := startServer(t, b, Config{})
	c, ev := connect(t, s1.Addr().String(), s2.Addr().String())
	first := c.Server()
	gone, stay := s1, s2
	if first != s1.Addr().String() {
		gone, stay = s2, s1
	}
	other, _ := connect(t, stay.Addr().String())
	acl := gozk.WorldACL(gozk.PermAll)
	_, err := c.Create("/r", []byte("1"), gozk.FlagEphemeral, acl)
	require.NoError(t, err)
	_, err = other.Create("/r2", []byte("1"), 0, acl)
	require.NoError(t, err)
	_, _, wch, err := c.GetW("/r2")
	require.NoError(t, err)
	sid := c.SessionID()

	// The controller goes away; while c is disconnected, /r2 changes, so
	// its re-armed watch fires at once.
	b.detach(gone)
	gone.Close()
	waitState(t, ev, gozk.StateDisconnected)
	_, err = other.Set("/r2", []byte("2"), -1)
	require.NoError(t, err)
	waitState(t, ev, gozk.StateHasSession)
	require.Equal(t, sid, c.SessionID())
	require.NotEqual(t, first, c.Server())
	require.Equal(t, gozk.EventNodeDataChanged, waitEvent(t, wch).Type)
	_, st, err := c.Get("/r")
	require.NoError(t, err)
	require.Equal(t, sid, st.EphemeralOwner)
}

// TestResumeRefused: a wrong password or an unknown session gets the
// expired answer (timeout 0, session 0); a client that saw a newer zxid
// than this controller applied is refused.
func TestResumeRefused(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	sid, pw := r.sid, r.pw
	require.Len(t, pw, jute.PasswordLen)
	l, ok := b.st.Lease(sid)
	require.True(t, ok)
	require.Equal(t, passwordHash(pw), l.SecretHash)
	require.Equal(t, int64(4000), l.TTLMS)

	bad := append([]byte(nil), pw...)
	bad[0] ^= 1
	r2 := dialRaw(t, s.Addr().String())
	resp := r2.handshake(jute.ConnectRequest{SessionID: sid, Passwd: bad})
	require.Zero(t, resp.SessionID)
	require.Zero(t, resp.TimeOut)
	require.True(t, r2.closed())

	r3 := dialRaw(t, s.Addr().String())
	resp = r3.handshake(jute.ConnectRequest{SessionID: 12345, Passwd: pw})
	require.Zero(t, resp.SessionID)

	// The right password resumes, and the old connection is dropped.
	r4 := dialRaw(t, s.Addr().String())
	resp = r4.handshake(jute.ConnectRequest{SessionID: sid, Passwd: pw, TimeOut: 30000, HasReadOnly: true})
	require.Equal(t, sid, resp.SessionID)
	require.Equal(t, int32(4000), resp.TimeOut)
	require.True(t, resp.HasReadOnly)
	require.False(t, resp.ReadOnly)
	require.True(t, r.closed())

	// A client from the future.
	r5 := dialRaw(t, s.Addr().String())
	r5.write(jute.AppendFrame(nil, &jute.ConnectRequest{LastZxidSeen: 1 << 40, TimeOut: 4000}))
	require.True(t, r5.closed())

	// Timeouts are clamped.
	r6 := dialRaw(t, s.Addr().String())
	resp = r6.handshake(jute.ConnectRequest{TimeOut: 1})
	require.Equal(t, int32(2000), resp.TimeOut)
	r7 := dialRaw(t, s.Addr().String())
	resp = r7.handshake(jute.ConnectRequest{TimeOut: 1 << 30})
	require.Equal(t, int32(40000), resp.TimeOut)
}

// TestResumeBindsSession: a session resumes only once a bind of it to
// the new connection is committed, so that a read right after it sees a
// write the client left in flight on its lost connection, if that write
// will ever be applied (a lock recipe looks for its own node that way).
// Without a leader to commit the bind the server refuses the reconnect,
// and the session stays for the client to resume elsewhere. A session
// this controller does not know yet is looked for again after a
// linearizable read, not called expired at once.
func TestResumeBindsSession(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	sid, pw := r.sid, r.pw

	b.failWith(errNoLeader)
	r2 := dialRaw(t, s.Addr().String())
	r2.write(jute.AppendFrame(nil, &jute.ConnectRequest{SessionID: sid, Passwd: pw, TimeOut: 4000}))
	r2.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := r2.fr.ReadFrame()
	var ne net.Error
	require.Error(t, err, "no bind, no ConnectResponse")
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server closes the connection: %v", err)
	l, ok := b.st.Lease(sid)
	require.True(t, ok, "a refused reconnect leaves the session alone")
	require.Zero(t, l.ZKConn)
	require.Equal(t, 1.0, testutil.ToFloat64(s.met.refused.WithLabelValues("resume_not_caught_up")))

	b.failWith(nil)
	r3 := dialRaw(t, s.Addr().String())
	resp := r3.handshake(jute.ConnectRequest{SessionID: sid, Passwd: pw, TimeOut: 4000})
	require.Equal(t, sid, resp.SessionID)
	l, _ = b.st.Lease(sid)
	require.NotZero(t, l.ZKConn, "the session is bound to its new connection")

	// A wrong password binds nothing (and costs the log nothing).
	applied := b.AppliedIndex()
	r4 := dialRaw(t, s.Addr().String())
	resp = r4.handshake(jute.ConnectRequest{SessionID: sid, Passwd: make([]byte, 16), TimeOut: 4000})
	require.Zero(t, resp.SessionID)
	require.Equal(t, applied, b.AppliedIndex())
	l2, _ := b.st.Lease(sid)
	require.Equal(t, l.ZKConn, l2.ZKConn)

	// Unknown here: one barrier, then the answer for an expired session.
	before := b.barriers.Load()
	r5 := dialRaw(t, s.Addr().String())
	resp = r5.handshake(jute.ConnectRequest{SessionID: sid + 100, Passwd: pw, TimeOut: 4000})
	require.Zero(t, resp.SessionID)
	require.Equal(t, before+1, b.barriers.Load())
}

// TestSessionMovedClosesOldConnection: once a session resumed on another
// controller, a write still sent through the connection it left is
// refused by the state machine (SessionMoved), changes nothing, and that
// connection is closed without an answer, as ZooKeeper does. The new
// connection writes.
func TestSessionMovedClosesOldConnection(t *testing.T) {
	b := newFakeBackend()
	sa, sb := startServer(t, b, Config{}), startServer(t, b, Config{})
	old := openRaw(t, sa.Addr().String())
	require.Equal(t, jute.CodeOK, old.call(jute.OpCreate, &jute.CreateRequest{Path: "/n", Data: []byte("a"), ACL: openACL}, nil).Err)

	moved := dialRaw(t, sb.Addr().String())
	require.Equal(t, old.sid, moved.handshake(jute.ConnectRequest{SessionID: old.sid, Passwd: old.pw}).SessionID)

	old.write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 9, Type: jute.OpSetData},
		&jute.SetDataRequest{Path: "/n", Data: []byte("stale"), Version: -1}))
	old.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := old.fr.ReadFrame()
	var ne net.Error
	require.Error(t, err, "no answer to a write from the connection the session left")
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection is closed: %v", err)
	n, _ := b.st.ZNode("/n")
	require.Equal(t, "a", string(n.Data))
	require.Equal(t, 1.0, testutil.ToFloat64(sa.met.refused.WithLabelValues("session_moved")))

	var st jute.StatResponse
	require.Equal(t, jute.CodeOK, moved.call(jute.OpSetData, &jute.SetDataRequest{Path: "/n", Data: []byte("b"), Version: -1}, &st).Err)
	n, _ = b.st.ZNode("/n")
	require.Equal(t, "b", string(n.Data))
}

// TestUnknownOutcomeClosesConnection: a write whose outcome is unknown
// is never answered; the connection closes (ConnectionLoss).
func TestUnknownOutcomeClosesConnection(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	b.failWith(errNoLeader)
	r.write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpCreate},
		&jute.CreateRequest{Path: "/x", ACL: openACL}))
	require.True(t, r.closed())
	b.failWith(nil)
	_, ok := b.st.ZNode("/x")
	require.False(t, ok)
}

// TestReaper: on the leader, empty used containers and expired TTL nodes
// go; the rest stay.
func TestReaper(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{ContainerCheckInterval: time.Hour})
	c, _ := connect(t, s.Addr().String())
	acl := gozk.WorldACL(gozk.PermAll)
	_, err := c.CreateContainer("/used", nil, 4, acl)
	require.NoError(t, err)
	_, err = c.CreateContainer("/fresh", nil, 4, acl)
	require.NoError(t, err)
	_, err = c.Create("/used/k", nil, 0, acl)
	require.NoError(t, err)
	_, err = c.CreateTTL("/ttl", nil, gozk.FlagTTL, acl, time.Minute)
	require.NoError(t, err)
	_, err = c.CreateTTL("/ttlp", nil, gozk.FlagTTL, acl, time.Minute)
	require.NoError(t, err)
	_, err = c.Create("/ttlp/k", nil, 0, acl)
	require.NoError(t, err)

	require.Empty(t, s.reapOnce())
	require.NoError(t, c.Delete("/used/k", -1))
	require.Equal(t, []string{"/used"}, s.reapOnce())
	b.advance(2 * time.Minute)
	require.Equal(t, []string{"/ttl"}, s.reapOnce())
	_, err = c.Create("/used", nil, 0, acl)
	require.NoError(t, err) // it really is gone
}

func TestConfigAndBounds(t *testing.T) {
	b := newFakeBackend()
	_, err := New(Config{FourLetterWords: []string{"dump"}}, b)
	require.Error(t, err)
	_, err = New(Config{MinSessionTimeout: time.Minute, MaxSessionTimeout: time.Second}, b)
	require.Error(t, err)

	s := startServer(t, b, Config{MaxConns: 1})
	r := openRaw(t, s.Addr().String())
	_ = r
	r2 := dialRaw(t, s.Addr().String())
	require.True(t, r2.closed())

	// TTL nodes off.
	s2 := startServer(t, b, Config{DisableExtendedTypes: true})
	r3 := openRaw(t, s2.Addr().String())
	h := r3.call(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/t", ACL: openACL, Flags: jute.FlagPersistentWithTTL, TTL: 1000}, nil)
	require.Equal(t, jute.CodeUnimplemented, h.Err)
}

// TestStrandedSessionsMove: when keep-alives stop reaching the leader
// (this controller is cut off), a session's connection is closed once half
// its timeout passed without a refresh, so its client moves to a
// controller that reaches the leader before the leader expires it. A
// short outage (a failover) moves no one.
func TestStrandedSessionsMove(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	c, ev := connect(t, s.Addr().String())
	sid := c.SessionID()
	// The client has its session once it reads the handshake's answer; the
	// server binds the session (and notes it refreshed, at the fake clock's
	// now) just after writing it. Wait for that, or the clock moved below
	// could date the binding a second later (seen under load).
	require.Eventually(t, func() bool { _, ok := s.keep.lastOK(sid); return ok }, 10*time.Second, time.Millisecond)
	noLeader := errors.New("no leader")
	b.proposeErr.Store(&noLeader)

	// A quarter of the 4s timeout without a refresh: the client stays.
	b.advance(time.Second)
	calls := b.keepAlives.Load()
	require.Eventually(t, func() bool { return b.keepAlives.Load() > calls+2 }, 10*time.Second, time.Millisecond)
	require.Equal(t, gozk.StateHasSession, c.State())

	// Past half of it: the connection is closed and the client reconnects
	// (here to the same server, the only one), keeping its session.
	b.advance(1500 * time.Millisecond)
	waitState(t, ev, gozk.StateDisconnected)
	b.proposeErr.Store(nil)
	waitState(t, ev, gozk.StateHasSession)
	require.Equal(t, sid, c.SessionID())
}

// TestWatchEventNeverOvertakesItsReply: a change applied after a getData
// with a watch read the node, but before its reply was queued, fires the
// new watch; its event must come after the reply. Clients register a
// watcher when they read the reply and drop events for paths they do not
// watch yet, so an event first is lost and the client waits forever (a
// lock recipe waiting on its predecessor hung this way).
func TestWatchEventNeverOvertakesItsReply(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	w, _ := connect(t, s.Addr().String())
	_, err := w.Create("/x", []byte("1"), 0, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)

	var once sync.Once
	hook := func(req jute.Request) {
		if pw, ok := req.Body.(*jute.PathWatchRequest); ok && pw.Watch && pw.Path == "/x" {
			once.Do(func() {
				_, err := b.ProposePayload(context.Background(), metadata.OpZNodeDelete, metadata.ZNodeDelete{Path: "/x", Version: -1})
				require.NoError(t, err)
			})
		}
	}
	s.beforeReply.Store(&hook)

	r := openRaw(t, s.Addr().String())
	var resp jute.GetDataResponse
	h := r.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/x", Watch: true}, &resp)
	require.Equal(t, jute.CodeOK, h.Err, "the node existed when the request read it")
	require.Equal(t, "1", string(resp.Data))
	require.Empty(t, r.events, "a watch event came before the reply of the request that set the watch")
	ev := r.nextEvent()
	require.Equal(t, jute.EventNodeDeleted, ev.Type)
	require.Equal(t, "/x", ev.Path)
}

// TestWatchEventComesBeforeTheReplyShowingTheChange: a session that
// watches a node and then changes it must get the watch event before the
// reply to its change. Replies skip the outbound queue when it is empty
// (conn.sendReply), so this checks they never skip a queued event.
func TestWatchEventComesBeforeTheReplyShowingTheChange(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	h := r.call(jute.OpCreate, &jute.CreateRequest{Path: "/y", Data: []byte("0"), ACL: openACL}, nil)
	require.Equal(t, jute.CodeOK, h.Err)
	for i := range 300 {
		r.events = nil
		var got jute.GetDataResponse
		h := r.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/y", Watch: true}, &got)
		require.Equal(t, jute.CodeOK, h.Err)
		h = r.call(jute.OpSetData, &jute.SetDataRequest{Path: "/y", Data: []byte(strconv.Itoa(i)), Version: -1}, nil)
		require.Equal(t, jute.CodeOK, h.Err)
		require.Len(t, r.events, 1, "round %d: the setData reply came before the watch event it fired", i)
		require.Equal(t, jute.EventNodeDataChanged, r.events[0].Type)
	}
}

// TestResumesShareBindEntries: resumes that wait while a bind is being
// committed go into one entry together (a reconnect storm after a
// controller dies would otherwise write one entry per session).
func TestResumesShareBindEntries(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	const n = 20
	olds := make([]*rawClient, n)
	for i := range olds {
		olds[i] = openRaw(t, s.Addr().String())
	}
	start := b.AppliedIndex()
	b.mu.Lock() // the log stalls: the first binds wait, the others queue
	var unlock sync.Once
	t.Cleanup(func() { unlock.Do(b.mu.Unlock) }) // before the server closes
	resumed := make(chan int64, n)
	for _, o := range olds {
		go func() {
			r := dialRaw(t, s.Addr().String())
			r.write(jute.AppendFrame(nil, &jute.ConnectRequest{SessionID: o.sid, Passwd: o.pw, TimeOut: 4000}))
			body, err := r.fr.ReadFrame()
			if err != nil {
				resumed <- 0
				return
			}
			var resp jute.ConnectResponse
			if jute.Decode(body, &resp) != nil {
				resumed <- 0
				return
			}
			resumed <- resp.SessionID
		}()
	}
	// Every resume waits for its bind: in the entry stalled behind the
	// lock, or queued for the binder. (How many went into the stalled
	// entry depends on how the goroutines were scheduled.)
	waiting := func() bool { return b.bindsProposing.Load()+int64(len(s.binds)) == n }
	if !assert.Eventually(t, waiting, 10*time.Second, time.Millisecond) {
		t.Fatalf("binds waiting: %d in the stalled entry, %d queued, want %d in all", b.bindsProposing.Load(), len(s.binds), n)
	}
	unlock.Do(b.mu.Unlock)
	for range n {
		require.NotZero(t, <-resumed)
	}
	require.LessOrEqual(t, b.AppliedIndex()-start, uint64(n/2),
		"the binds that queued behind the first entry share the next one")
	for _, o := range olds {
		l, _ := b.st.Lease(o.sid)
		require.NotZero(t, l.ZKConn)
	}
}
