package zk

import (
	"io"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

func fourLetter(t *testing.T, addr, word string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = nc.Write([]byte(word))
	require.NoError(t, err)
	out, err := io.ReadAll(nc)
	require.NoError(t, err)
	return string(out)
}

func TestFourLetterWords(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{ServerID: "c1", Version: "corral-test"})
	addr := s.Addr().String()
	require.Equal(t, "imok", fourLetter(t, addr, "ruok"))
	require.Equal(t, "rw", fourLetter(t, addr, "isro"))
	srvr := fourLetter(t, addr, "srvr")
	require.Contains(t, srvr, "Zookeeper version: corral-test\n")
	require.Contains(t, srvr, "Mode: leader\n")
	require.Contains(t, srvr, "Node count: 4\n") // /, /zookeeper and its two
	require.Contains(t, fourLetter(t, addr, "mntr"), "zk_server_state\tleader\n")
	require.Equal(t, "conf is not executed because it is not in the whitelist.\n", fourLetter(t, addr, "conf"))
	require.Equal(t, "dump is not executed because it is not in the whitelist.\n", fourLetter(t, addr, "dump"))

	all := startServer(t, b, Config{FourLetterWords: []string{"*"}, ServerID: "c1"})
	require.Contains(t, fourLetter(t, all.Addr().String(), "conf"), "serverId=c1\n")
	openRaw(t, all.Addr().String())
	require.Contains(t, fourLetter(t, all.Addr().String(), "stat"), "Clients:\n /127.0.0.1:")
}

// TestBadInput: garbage, huge lengths, malformed bodies and unknown
// opcodes cost only their own connection; the server keeps serving.
func TestBadInput(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	addr := s.Addr().String()
	good := openRaw(t, addr)

	// Random bytes instead of a connect request.
	rng := rand.New(rand.NewSource(1))
	junk := make([]byte, 300)
	rng.Read(junk)
	r := dialRaw(t, addr)
	r.write(junk)
	require.True(t, r.closed())

	// A huge length prefix, before and after the handshake.
	r = dialRaw(t, addr)
	r.write([]byte{0x7f, 0xff, 0xff, 0x00})
	require.True(t, r.closed())
	r = openRaw(t, addr)
	r.write([]byte{0x10, 0, 0, 0})
	require.True(t, r.closed())

	// A request body that does not decode.
	r = openRaw(t, addr)
	r.write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpGetData}, &jute.Int32Response{Value: 1 << 30}))
	require.True(t, r.closed())

	// A multi mixing reads and writes.
	r = openRaw(t, addr)
	r.write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpMulti}, &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpGetData, Req: &jute.PathWatchRequest{Path: "/"}},
		{Type: jute.OpCreate, Req: &jute.CreateRequest{Path: "/m", ACL: openACL}},
	}}))
	require.True(t, r.closed())

	// An unknown opcode (or one not served, like reconfig) is answered
	// Unimplemented, then the connection closes, as ZooKeeper does.
	for _, op := range []jute.Op{999, jute.OpReconfig} {
		r = openRaw(t, addr)
		h := r.call(op, &jute.Empty{}, nil)
		require.Equal(t, jute.CodeUnimplemented, h.Err)
		require.True(t, r.closed())
	}

	// Unknown auth scheme: AuthFailed, then the connection ends.
	r = openRaw(t, addr)
	h := r.call(jute.OpAuth, &jute.AuthPacket{Scheme: "kerberos", Auth: []byte("x")}, nil)
	require.Equal(t, jute.CodeAuthFailed, h.Err)
	require.True(t, r.closed())

	// The first connection never noticed.
	var st jute.StatResponse
	require.Equal(t, jute.CodeOK, good.call(jute.OpExists, &jute.PathWatchRequest{Path: "/zookeeper"}, &st).Err)
	require.Equal(t, int32(2), st.Stat.NumChildren)
}

// TestRawOps covers what go-zookeeper does not send.
func TestRawOps(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	w := openRaw(t, s.Addr().String())
	ok := func(h jute.ReplyHeader) { t.Helper(); require.Equal(t, jute.CodeOK, h.Err) }
	var pr jute.PathResponse
	ok(r.call(jute.OpCreate, &jute.CreateRequest{Path: "/p", ACL: openACL}, &pr))
	ok(r.call(jute.OpCreate, &jute.CreateRequest{Path: "/p/a", ACL: openACL}, &pr))
	var c2 jute.Create2Response
	ok(r.call(jute.OpCreate2, &jute.CreateRequest{Path: "/p/e", ACL: openACL, Flags: jute.FlagEphemeral}, &c2))
	require.Equal(t, r.sid, c2.Stat.EphemeralOwner)

	// getEphemerals (prefix), getAllChildrenNumber, whoAmI.
	var ss jute.StringsResponse
	ok(r.call(jute.OpGetEphemerals, &jute.PathRequest{Path: "/p"}, &ss))
	require.Equal(t, []string{"/p/e"}, ss.Strings)
	ok(r.call(jute.OpGetEphemerals, &jute.PathRequest{Path: "/q"}, &ss))
	require.Empty(t, ss.Strings)
	var n jute.Int32Response
	ok(r.call(jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/p"}, &n))
	require.Equal(t, int32(2), n.Value)
	ok(r.call(jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/"}, &n))
	require.Equal(t, int32(6), n.Value)
	ok(r.call(jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: []byte("bob:pw")}, nil))
	var who jute.WhoAmIResponse
	ok(r.call(jute.OpWhoAmI, &jute.Empty{}, &who))
	require.Equal(t, []jute.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "digest", User: "bob"}}, who.ClientInfo)

	// A lone check, and multiRead.
	var st jute.StatResponse
	ok(r.call(jute.OpCheck, &jute.PathVersionRequest{Path: "/p", Version: 0}, &st))
	require.Equal(t, jute.CodeBadVersion, r.call(jute.OpCheck, &jute.PathVersionRequest{Path: "/p", Version: 3}, nil).Err)
	var mr jute.MultiResponse
	ok(r.call(jute.OpMultiRead, &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpGetChildren, Req: &jute.PathWatchRequest{Path: "/p"}},
		{Type: jute.OpGetData, Req: &jute.PathWatchRequest{Path: "/nope"}},
	}}, &mr))
	require.Equal(t, []string{"a", "e"}, mr.Results[0].Resp.(*jute.StringsResponse).Strings)
	require.Equal(t, jute.MultiResult{Type: jute.OpError, Err: jute.CodeNoNode}, mr.Results[1])

	// Persistent and recursive watches (addWatch), checkWatches and
	// removeWatches.
	var i32 jute.Int32Response
	ok(w.call(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/p", Mode: jute.AddWatchPersistentRecursive}, &i32))
	ok(w.call(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/p/a", Mode: jute.AddWatchPersistent}, &i32))
	ok(w.call(jute.OpCheckWatches, &jute.WatchesRequest{Path: "/p", Type: jute.WatcherPersistentRecursive}, nil))
	require.Equal(t, jute.CodeNoWatcher, w.call(jute.OpCheckWatches, &jute.WatchesRequest{Path: "/p", Type: jute.WatcherData}, nil).Err)
	ok(r.call(jute.OpSetData, &jute.SetDataRequest{Path: "/p/a", Data: []byte("x"), Version: -1}, &st))
	require.Equal(t, jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/p/a"}, w.nextEvent())
	ok(r.call(jute.OpCreate, &jute.CreateRequest{Path: "/p/a/deep", ACL: openACL}, &pr))
	require.Equal(t, jute.WatcherEvent{Type: jute.EventNodeCreated, State: jute.StateSyncConnected, Path: "/p/a/deep"}, w.nextEvent())
	// Persistent: the /p/a watch sees its children change, and stays.
	require.Equal(t, jute.WatcherEvent{Type: jute.EventNodeChildrenChanged, State: jute.StateSyncConnected, Path: "/p/a"}, w.nextEvent())
	// A recursive watch never tells of nodes the session cannot read.
	ok(r.call(jute.OpCreate, &jute.CreateRequest{Path: "/p/secret", ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "auth"}}}}, &pr))
	ok(r.call(jute.OpSetData, &jute.SetDataRequest{Path: "/p/a", Data: []byte("y"), Version: -1}, &st))
	require.Equal(t, jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/p/a"}, w.nextEvent())
	ok(w.call(jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/p", Type: jute.WatcherAny}, nil))
	require.Equal(t, jute.CodeNoWatcher, w.call(jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/p", Type: jute.WatcherAny}, nil).Err)
	require.Equal(t, jute.CodeBadArguments, w.call(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/p", Mode: 7}, nil).Err)

	// setWatches2 from a "reconnected" client: what changed since its
	// zxid fires now; the persistent watch is armed.
	x := openRaw(t, s.Addr().String())
	ok(x.call(jute.OpSetWatches2, &jute.SetWatchesRequest{Two: true, RelativeZxid: 1,
		DataWatches: []string{"/p/a", "/gone"}, ExistWatches: []string{"/new"}, PersistentWatches: []string{"/p"}}, nil))
	got := map[string]jute.EventType{}
	for _, ev := range x.events {
		got[ev.Path] = ev.Type
	}
	require.Equal(t, map[string]jute.EventType{"/p/a": jute.EventNodeDataChanged, "/gone": jute.EventNodeDeleted}, got)
	ok(x.call(jute.OpCheckWatches, &jute.WatchesRequest{Path: "/p", Type: jute.WatcherPersistent}, nil))
	ok(x.call(jute.OpCheckWatches, &jute.WatchesRequest{Path: "/new", Type: jute.WatcherData}, nil))

	// closeSession deletes the session's ephemerals.
	h := r.call(jute.OpCloseSession, &jute.Empty{}, nil)
	ok(h)
	require.True(t, r.closed())
	_, found := b.st.ZNode("/p/e")
	require.False(t, found)

	// Bad paths and writes to the virtual nodes.
	require.Equal(t, jute.CodeBadArguments, x.call(jute.OpGetData, &jute.PathWatchRequest{Path: "p"}, nil).Err)
	require.Equal(t, jute.CodeBadArguments, x.call(jute.OpSetData, &jute.SetDataRequest{Path: "/zookeeper/config", Version: -1}, nil).Err)
	require.Equal(t, jute.CodeBadArguments, x.call(jute.OpDelete, &jute.PathVersionRequest{Path: "/zookeeper", Version: -1}, nil).Err)
	require.Equal(t, jute.CodeBadArguments, x.call(jute.OpDelete, &jute.PathVersionRequest{Path: "/", Version: -1}, nil).Err)
	require.Equal(t, jute.CodeInvalidACL, x.call(jute.OpCreate, &jute.CreateRequest{Path: "/bad", ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "someone"}}}}, nil).Err)
	require.Equal(t, jute.CodeInvalidACL, x.call(jute.OpCreate, &jute.CreateRequest{Path: "/bad"}, nil).Err)
	require.Equal(t, jute.CodeBadArguments, x.call(jute.OpCreate, &jute.CreateRequest{Path: "/bad", ACL: openACL, Flags: 9}, nil).Err)

	// The zxid of reply headers never decreases.
	var last int64
	for i := 0; i < 5; i++ {
		h := x.call(jute.OpExists, &jute.PathWatchRequest{Path: "/p"}, &st)
		require.GreaterOrEqual(t, h.Zxid, last)
		last = h.Zxid
	}
	require.Equal(t, int64(b.AppliedIndex()), last)
}

// TestIPACL: the ip scheme matches the connection's address or range.
func TestIPACL(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{})
	r := openRaw(t, s.Addr().String())
	var pr jute.PathResponse
	require.Equal(t, jute.CodeOK, r.call(jute.OpCreate, &jute.CreateRequest{Path: "/lo", Data: []byte("1"),
		ACL: []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "ip", ID: "127.0.0.0/8"}}}}, &pr).Err)
	require.Equal(t, jute.CodeOK, r.call(jute.OpCreate, &jute.CreateRequest{Path: "/far", Data: []byte("1"),
		ACL: []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "ip", ID: "10.1.2.3"}}}}, &pr).Err)
	var gd jute.GetDataResponse
	require.Equal(t, jute.CodeOK, r.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/lo"}, &gd).Err)
	require.Equal(t, jute.CodeNoAuth, r.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/far"}, &gd).Err)
	require.Equal(t, jute.CodeNoAuth, r.call(jute.OpSetData, &jute.SetDataRequest{Path: "/lo", Version: -1}, nil).Err)
}

// FuzzServerConn feeds arbitrary bytes after a valid connect request:
// whatever arrives, the server neither panics nor hangs, and goes on
// serving other connections.
func FuzzServerConn(f *testing.F) {
	f.Add(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/", Watch: true}))
	f.Add(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpCreate}, &jute.CreateRequest{Path: "/a", ACL: openACL, Flags: 3}))
	f.Add(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpMulti}, &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Req: &jute.CreateRequest{Path: "/m", ACL: openACL}},
		{Type: jute.OpCheck, Req: &jute.PathVersionRequest{Path: "/m", Version: 0}}}}))
	f.Add(jute.AppendFrame(nil, &jute.RequestHeader{Xid: -8, Type: jute.OpSetWatches2}, &jute.SetWatchesRequest{Two: true, DataWatches: []string{"/x"}}))
	f.Add(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 2, Type: jute.OpAddWatch}, &jute.AddWatchRequest{Path: "/", Mode: 1}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	b := newFakeBackend()
	s, err := New(Config{Logger: testLogger(f), MaxWatchesPerConn: 100}, b)
	require.NoError(f, err)
	b.attach(s)
	f.Cleanup(func() { s.Close() })
	connect := jute.AppendFrame(nil, &jute.ConnectRequest{TimeOut: 4000})
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		s.mu.Lock()
		c := newConn(s, server, 1<<40+1)
		s.conns[c.id] = c
		s.mu.Unlock()
		s.met.connections.Inc()
		done := make(chan struct{})
		go func() { defer close(done); c.serve() }()
		go io.Copy(io.Discard, client)
		client.SetDeadline(time.Now().Add(5 * time.Second))
		client.Write(connect)
		client.Write(in)
		// Say goodbye with a ping: if the connection is still up it is
		// answered, then closing the client ends it.
		client.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: -2, Type: jute.OpPing}))
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("connection did not end")
		}
		// The tree holds nothing invalid.
		require.GreaterOrEqual(t, b.st.AllChildrenNumber("/"), 0)
	})
}

// TestFourLetterWordAnswerSurvivesATrailingNewline: `echo ruok | nc`
// sends "ruok\n". A server that closed with the newline unread made the
// kernel reset the connection, and the client lost the answer unless it
// had read it first (half of such nc runs). The client here reads only
// after the server has let the connection go, so that race always goes
// the bad way; the answer must still arrive, then a clean EOF.
func TestFourLetterWordAnswerSurvivesATrailingNewline(t *testing.T) {
	b := newFakeBackend()
	s := startServer(t, b, Config{ServerID: "c1"})
	open := func() int {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return len(s.conns)
	}
	for _, word := range []string{"ruok", "srvr", "ruok"} {
		nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
		require.NoError(t, err)
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = nc.Write([]byte(word + "\n"))
		require.NoError(t, err)
		require.NoError(t, nc.(*net.TCPConn).CloseWrite()) // as nc does at the end of its input
		require.Eventually(t, func() bool { return open() == 0 }, 5*time.Second, time.Millisecond)
		out, err := io.ReadAll(nc)
		nc.Close()
		require.NoError(t, err, word)
		if word == "ruok" {
			require.Equal(t, "imok", string(out))
		} else {
			require.Contains(t, string(out), "Mode: leader\n")
		}
	}
}
