package jute_test

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/jute"
)

// These tests run github.com/go-zookeeper/zk, a client no one here wrote,
// against a scripted server built from this package over real TCP. The
// server decodes the client's bytes with jute's Decoder and answers with
// jute's Encoder; the test checks both what the client sent and what its
// API returned. If either side of the codec disagreed with the client on
// a single field, a decode here or in the client would fail or a value
// would differ.

const waitFor = 5 * time.Second

// fakeZK accepts one client connection and hands the test each request it
// decodes; pings it answers itself (they come whenever the client likes).
type fakeZK struct {
	t       *testing.T
	ln      net.Listener
	connReq chan jute.ConnectRequest
	reqs    chan jute.Request
	errs    chan error

	mu   sync.Mutex // guards conn writes and zxid
	conn net.Conn
	zxid int64
}

func startFakeZK(t *testing.T, sessionID int64, passwd []byte) *fakeZK {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &fakeZK{t: t, ln: ln, connReq: make(chan jute.ConnectRequest, 1),
		reqs: make(chan jute.Request, 16), errs: make(chan error, 1), zxid: 100}
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close()
		}
		s.mu.Unlock()
	})
	go s.serve(sessionID, passwd)
	return s
}

func (s *fakeZK) addr() string { return s.ln.Addr().String() }

func (s *fakeZK) fail(err error) {
	select {
	case s.errs <- err:
	default:
	}
}

// serve handles connections one after another, so a client that lost its
// connection can come back (with its session) to the same server.
func (s *fakeZK) serve(sessionID int64, passwd []byte) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // the listener closed at the end of the test
		}
		s.mu.Lock()
		s.conn = c
		s.mu.Unlock()
		s.serveConn(c, sessionID, passwd)
	}
}

func (s *fakeZK) serveConn(c net.Conn, sessionID int64, passwd []byte) {
	fr := jute.NewFrameReader(c, 0)
	p, err := fr.ReadPrefix()
	if err != nil {
		s.fail(err)
		return
	}
	if w, ok := jute.FourLetterWord(p); ok {
		s.fail(errors.New("client sent four-letter word " + w))
		return
	}
	body, err := fr.ReadBody(p)
	if err != nil {
		s.fail(err)
		return
	}
	var cr jute.ConnectRequest
	if err := jute.Decode(body, &cr); err != nil {
		s.fail(err)
		return
	}
	s.connReq <- cr
	s.write(&jute.ConnectResponse{ProtocolVersion: jute.ProtocolVersion, TimeOut: cr.TimeOut,
		SessionID: sessionID, Passwd: passwd, HasReadOnly: cr.HasReadOnly})

	for {
		frame, err := fr.ReadFrame()
		if err != nil {
			// The client closed, or the test dropped the connection; a
			// test waiting for a request notices by its deadline.
			return
		}
		req, err := jute.DecodeRequest(bytes.Clone(frame))
		if err != nil {
			s.fail(err)
			return
		}
		if req.Header.Type == jute.OpPing {
			s.mu.Lock()
			h := &jute.ReplyHeader{Xid: req.Header.Xid, Zxid: s.zxid}
			s.mu.Unlock()
			s.write(h)
			continue
		}
		s.reqs <- req
	}
}

// drop closes the client's connection, as a crashed server would.
func (s *fakeZK) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn.Close()
}

// connected returns the next ConnectRequest the server received.
func (s *fakeZK) connected() jute.ConnectRequest {
	s.t.Helper()
	select {
	case cr := <-s.connReq:
		return cr
	case err := <-s.errs:
		s.t.Fatalf("fake server: %v", err)
	case <-time.After(waitFor):
		s.t.Fatal("no connect request")
	}
	return jute.ConnectRequest{}
}

func (s *fakeZK) write(records ...jute.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(waitFor))
	if _, err := s.conn.Write(jute.AppendFrame(nil, records...)); err != nil {
		s.fail(err)
	}
}

// reply answers req with a header carrying the next zxid and, on success,
// body.
func (s *fakeZK) reply(req jute.Request, code jute.Code, body jute.Record) {
	s.mu.Lock()
	s.zxid++
	h := &jute.ReplyHeader{Xid: req.Header.Xid, Zxid: s.zxid, Err: code}
	s.mu.Unlock()
	if code != jute.CodeOK {
		body = nil
	}
	s.write(h, body)
}

// next returns the next request the client sent, which must be of type op.
func (s *fakeZK) next(op jute.Op) jute.Request {
	s.t.Helper()
	select {
	case r := <-s.reqs:
		require.Equal(s.t, op, r.Header.Type, "request type")
		require.Greater(s.t, r.Header.Xid, int32(0), "ordinary requests have positive xids")
		return r
	case err := <-s.errs:
		s.t.Fatalf("fake server: %v", err)
	case <-time.After(waitFor):
		s.t.Fatalf("no %v request within %v", op, waitFor)
	}
	return jute.Request{}
}

// async runs f in a goroutine; await collects its result with a deadline,
// so a client that hangs fails the test instead of the test timing out.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

func await[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("client call did not return within %v", waitFor)
	}
	var zero T
	return zero
}

type quiet struct{}

func (quiet) Printf(string, ...interface{}) {}

func connect(t *testing.T, s *fakeZK) *zk.Conn {
	t.Helper()
	// The address twice: go-zookeeper waits a second before it retries a
	// list it has been through, and this spares a reconnect one such wait
	// (the client still takes about a second to come back).
	conn, _, err := zk.Connect([]string{s.addr(), s.addr()}, 30*time.Second, zk.WithLogger(quiet{}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	return conn
}

var stat = jute.Stat{Czxid: 11, Mzxid: 12, Ctime: 1700000000001, Mtime: 1700000000002, Version: 3,
	Cversion: 4, Aversion: 5, EphemeralOwner: 0x77, DataLength: 5, NumChildren: 6, Pzxid: 13}

func zkStat(s jute.Stat) *zk.Stat {
	return &zk.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner,
		DataLength: s.DataLength, NumChildren: s.NumChildren, Pzxid: s.Pzxid}
}

func TestGoZookeeperClient(t *testing.T) {
	passwd := []byte("0123456789abcdef")
	s := startFakeZK(t, 0x1234abcd, passwd)
	conn := connect(t, s)

	// The handshake: go-zookeeper sends no readOnly flag, so the server
	// answers without one, and the client takes the session.
	type created struct {
		path string
		err  error
	}
	createDone := async(func() created {
		p, err := conn.Create("/app/lock-", []byte("hello"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		return created{p, err}
	})
	cr := s.connected()
	require.Equal(t, int32(jute.ProtocolVersion), cr.ProtocolVersion)
	require.Equal(t, int32(30000), cr.TimeOut)
	require.Zero(t, cr.SessionID)
	require.Equal(t, make([]byte, jute.PasswordLen), cr.Passwd)
	require.False(t, cr.HasReadOnly)

	// create: the path, data, ACL and flags arrive as the client sent
	// them, and the client returns the path the server chose.
	req := s.next(jute.OpCreate)
	require.Equal(t, &jute.CreateRequest{Path: "/app/lock-", Data: []byte("hello"),
		ACL:   []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "anyone"}}},
		Flags: jute.FlagEphemeralSequential}, req.Body)
	s.reply(req, jute.CodeOK, &jute.PathResponse{Path: "/app/lock-0000000007"})
	c := await(t, createDone)
	require.NoError(t, c.err)
	require.Equal(t, "/app/lock-0000000007", c.path)
	require.Equal(t, int64(0x1234abcd), conn.SessionID())

	// getData: data and every Stat field.
	type got struct {
		data []byte
		stat *zk.Stat
		err  error
	}
	getDone := async(func() got { d, st, err := conn.Get("/app/x"); return got{d, st, err} })
	req = s.next(jute.OpGetData)
	require.Equal(t, &jute.PathWatchRequest{Path: "/app/x"}, req.Body)
	s.reply(req, jute.CodeOK, &jute.GetDataResponse{Data: []byte("value"), Stat: stat})
	g := await(t, getDone)
	require.NoError(t, g.err)
	require.Equal(t, []byte("value"), g.data)
	require.Equal(t, zkStat(stat), g.stat)

	// setData.
	type statErr struct {
		stat *zk.Stat
		err  error
	}
	setDone := async(func() statErr { st, err := conn.Set("/app/x", []byte("v2"), 3); return statErr{st, err} })
	req = s.next(jute.OpSetData)
	require.Equal(t, &jute.SetDataRequest{Path: "/app/x", Data: []byte("v2"), Version: 3}, req.Body)
	s.reply(req, jute.CodeOK, &jute.StatResponse{Stat: stat})
	se := await(t, setDone)
	require.NoError(t, se.err)
	require.Equal(t, zkStat(stat), se.stat)

	// An error code reaches the client as its typed error.
	delDone := async(func() error { return conn.Delete("/app/x", 9) })
	req = s.next(jute.OpDelete)
	require.Equal(t, &jute.PathVersionRequest{Path: "/app/x", Version: 9}, req.Body)
	s.reply(req, jute.CodeBadVersion, nil)
	require.ErrorIs(t, await(t, delDone), zk.ErrBadVersion)

	// exists on a missing node: NoNode is "false, no error" to the client.
	type existsRes struct {
		ok  bool
		err error
	}
	exDone := async(func() existsRes { ok, _, err := conn.Exists("/nope"); return existsRes{ok, err} })
	req = s.next(jute.OpExists)
	require.Equal(t, &jute.PathWatchRequest{Path: "/nope"}, req.Body)
	s.reply(req, jute.CodeNoNode, nil)
	ex := await(t, exDone)
	require.NoError(t, ex.err)
	require.False(t, ex.ok)

	// getChildren2.
	type kids struct {
		children []string
		stat     *zk.Stat
		err      error
	}
	chDone := async(func() kids { ch, st, err := conn.Children("/app"); return kids{ch, st, err} })
	req = s.next(jute.OpGetChildren2)
	require.Equal(t, &jute.PathWatchRequest{Path: "/app"}, req.Body)
	s.reply(req, jute.CodeOK, &jute.GetChildren2Response{Children: []string{"a", "b"}, Stat: stat})
	k := await(t, chDone)
	require.NoError(t, k.err)
	require.Equal(t, []string{"a", "b"}, k.children)
	require.Equal(t, zkStat(stat), k.stat)

	// createContainer and createTTL: ZooKeeper answers with a
	// Create2Response; the client reads the path and ignores the Stat.
	ccDone := async(func() created {
		p, err := conn.CreateContainer("/box", nil, zk.FlagContainer, zk.WorldACL(zk.PermRead))
		return created{p, err}
	})
	req = s.next(jute.OpCreateContainer)
	require.Equal(t, &jute.CreateRequest{Path: "/box", Data: nil,
		ACL:   []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "world", ID: "anyone"}}},
		Flags: jute.FlagContainer}, req.Body)
	s.reply(req, jute.CodeOK, &jute.Create2Response{Path: "/box", Stat: stat})
	require.Equal(t, created{"/box", nil}, await(t, ccDone))

	ttlDone := async(func() created {
		p, err := conn.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, zk.WorldACL(zk.PermAll), 90*time.Second)
		return created{p, err}
	})
	req = s.next(jute.OpCreateTTL)
	ttl := req.Body.(*jute.CreateTTLRequest)
	require.Equal(t, "/ttl", ttl.Path)
	require.Equal(t, jute.FlagPersistentWithTTL, ttl.Flags)
	require.Equal(t, int64(90000), ttl.TTL)
	s.reply(req, jute.CodeOK, &jute.Create2Response{Path: "/ttl", Stat: stat})
	require.Equal(t, created{"/ttl", nil}, await(t, ttlDone))

	// multi: every op arrives, and each result reaches the client.
	type multiRes struct {
		res []zk.MultiResponse
		err error
	}
	mDone := async(func() multiRes {
		res, err := conn.Multi(
			&zk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: zk.WorldACL(zk.PermAll)},
			&zk.SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0},
			&zk.CheckVersionRequest{Path: "/m", Version: 1},
			&zk.DeleteRequest{Path: "/m", Version: -1},
		)
		return multiRes{res, err}
	})
	req = s.next(jute.OpMulti)
	require.Equal(t, &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Req: &jute.CreateRequest{Path: "/m", Data: []byte("1"),
			ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "anyone"}}}}},
		{Type: jute.OpSetData, Req: &jute.SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0}},
		{Type: jute.OpCheck, Req: &jute.PathVersionRequest{Path: "/m", Version: 1}},
		{Type: jute.OpDelete, Req: &jute.PathVersionRequest{Path: "/m", Version: -1}},
	}}, req.Body)
	s.reply(req, jute.CodeOK, &jute.MultiResponse{Results: []jute.MultiResult{
		{Type: jute.OpCreate, Resp: &jute.PathResponse{Path: "/m"}},
		{Type: jute.OpSetData, Resp: &jute.StatResponse{Stat: stat}},
		{Type: jute.OpCheck},
		{Type: jute.OpDelete},
	}})
	m := await(t, mDone)
	require.NoError(t, m.err)
	require.Len(t, m.res, 4)
	require.Equal(t, "/m", m.res[0].String)
	require.Equal(t, zkStat(stat), m.res[1].Stat)

	// A failed multi: every op is an error result; the client reports the
	// first real failure.
	mDone = async(func() multiRes {
		res, err := conn.Multi(&zk.DeleteRequest{Path: "/a", Version: 1}, &zk.DeleteRequest{Path: "/b", Version: 1})
		return multiRes{res, err}
	})
	req = s.next(jute.OpMulti)
	s.reply(req, jute.CodeOK, &jute.MultiResponse{Results: []jute.MultiResult{
		{Type: jute.OpError, Err: jute.CodeNotEmpty},
		{Type: jute.OpError, Err: jute.CodeRuntimeInconsistency},
	}})
	m = await(t, mDone)
	require.ErrorIs(t, m.err, zk.ErrNotEmpty)

	// ACLs and auth.
	type aclRes struct {
		acl  []zk.ACL
		stat *zk.Stat
		err  error
	}
	gaDone := async(func() aclRes { a, st, err := conn.GetACL("/app"); return aclRes{a, st, err} })
	req = s.next(jute.OpGetACL)
	require.Equal(t, &jute.PathRequest{Path: "/app"}, req.Body)
	s.reply(req, jute.CodeOK, &jute.GetACLResponse{ACL: []jute.ACL{
		{Perms: jute.PermRead | jute.PermAdmin, ID: jute.ID{Scheme: "digest", ID: "bob:hash="}}}, Stat: stat})
	ga := await(t, gaDone)
	require.NoError(t, ga.err)
	require.Equal(t, []zk.ACL{{Perms: zk.PermRead | zk.PermAdmin, Scheme: "digest", ID: "bob:hash="}}, ga.acl)
	require.Equal(t, zkStat(stat), ga.stat)

	saDone := async(func() statErr {
		st, err := conn.SetACL("/app", zk.DigestACL(zk.PermAll, "bob", "pw"), 5)
		return statErr{st, err}
	})
	req = s.next(jute.OpSetACL)
	sa := req.Body.(*jute.SetACLRequest)
	require.Equal(t, "/app", sa.Path)
	require.Equal(t, int32(5), sa.Version)
	require.Len(t, sa.ACL, 1)
	require.Equal(t, "digest", sa.ACL[0].ID.Scheme)
	require.Equal(t, jute.PermAll, sa.ACL[0].Perms)
	s.reply(req, jute.CodeOK, &jute.StatResponse{Stat: stat})
	require.NoError(t, await(t, saDone).err)

	authDone := async(func() error { return conn.AddAuth("digest", []byte("bob:pw")) })
	req = s.next(jute.OpAuth)
	require.Equal(t, &jute.AuthPacket{Scheme: "digest", Auth: []byte("bob:pw")}, req.Body)
	s.reply(req, jute.CodeOK, &jute.Empty{})
	require.NoError(t, await(t, authDone))

	// sync.
	syncDone := async(func() created { p, err := conn.Sync("/app"); return created{p, err} })
	req = s.next(jute.OpSync)
	require.Equal(t, &jute.PathRequest{Path: "/app"}, req.Body)
	s.reply(req, jute.CodeOK, &jute.PathResponse{Path: "/app"})
	require.Equal(t, created{"/app", nil}, await(t, syncDone))

	// A data watch, fired by a notification (xid -1).
	type watched struct {
		ev  <-chan zk.Event
		err error
	}
	wDone := async(func() watched { _, _, ev, err := conn.GetW("/w"); return watched{ev, err} })
	req = s.next(jute.OpGetData)
	require.Equal(t, &jute.PathWatchRequest{Path: "/w", Watch: true}, req.Body)
	s.reply(req, jute.CodeOK, &jute.GetDataResponse{Data: []byte{}, Stat: stat})
	w := await(t, wDone)
	require.NoError(t, w.err)
	s.write(&jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1},
		&jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/w"})
	ev := await(t, w.ev)
	require.Equal(t, zk.EventNodeDataChanged, ev.Type)
	require.Equal(t, "/w", ev.Path)
	require.NoError(t, ev.Err)

	// closeSession.
	closeDone := async(func() struct{} { conn.Close(); return struct{}{} })
	req = s.next(jute.OpCloseSession)
	require.Equal(t, &jute.Empty{}, req.Body)
	s.reply(req, jute.CodeOK, &jute.Empty{})
	await(t, closeDone)
}

// After losing its connection the client comes back with its session id,
// password and last zxid, then re-arms its watches with setWatches; a
// notification on the new connection reaches the old watch.
func TestGoZookeeperReconnectSetWatches(t *testing.T) {
	passwd := []byte("fedcba9876543210")
	s := startFakeZK(t, 0x42, passwd)
	conn := connect(t, s)

	type watched struct {
		ev  <-chan zk.Event
		err error
	}
	dataW := async(func() watched { _, _, ev, err := conn.GetW("/w"); return watched{ev, err} })
	s.connected()
	req := s.next(jute.OpGetData)
	s.reply(req, jute.CodeOK, &jute.GetDataResponse{Data: []byte("d"), Stat: stat})
	require.NoError(t, await(t, dataW).err)

	existW := async(func() watched { _, _, ev, err := conn.ExistsW("/e"); return watched{ev, err} })
	req = s.next(jute.OpExists)
	require.Equal(t, &jute.PathWatchRequest{Path: "/e", Watch: true}, req.Body)
	s.reply(req, jute.CodeNoNode, nil)
	ew := await(t, existW)
	require.NoError(t, ew.err)

	childW := async(func() watched { _, _, ev, err := conn.ChildrenW("/c"); return watched{ev, err} })
	req = s.next(jute.OpGetChildren2)
	require.Equal(t, &jute.PathWatchRequest{Path: "/c", Watch: true}, req.Body)
	s.reply(req, jute.CodeOK, &jute.GetChildren2Response{Children: []string{}, Stat: stat})
	require.NoError(t, await(t, childW).err)

	s.mu.Lock()
	lastZxid := s.zxid
	s.mu.Unlock()
	s.drop()

	cr := s.connected()
	require.Equal(t, int64(0x42), cr.SessionID)
	require.Equal(t, passwd, cr.Passwd)
	require.Equal(t, lastZxid, cr.LastZxidSeen)
	require.Equal(t, int32(30000), cr.TimeOut)

	// go-zookeeper sends setWatches with an ordinary xid, not -8: a server
	// must go by the type.
	req = s.next(jute.OpSetWatches)
	require.Equal(t, &jute.SetWatchesRequest{RelativeZxid: lastZxid, DataWatches: []string{"/w"},
		ExistWatches: []string{"/e"}, ChildWatches: []string{"/c"}}, req.Body)
	s.reply(req, jute.CodeOK, &jute.Empty{})

	s.write(&jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1},
		&jute.WatcherEvent{Type: jute.EventNodeCreated, State: jute.StateSyncConnected, Path: "/e"})
	ev := await(t, ew.ev)
	require.Equal(t, zk.EventNodeCreated, ev.Type)
	require.Equal(t, "/e", ev.Path)
}

// A session the server no longer knows is answered with session id 0; the
// client must see it as expired.
func TestGoZookeeperSessionExpired(t *testing.T) {
	s := startFakeZK(t, 0, make([]byte, jute.PasswordLen))
	conn, events, err := zk.Connect([]string{s.addr()}, 30*time.Second, zk.WithLogger(quiet{}))
	require.NoError(t, err)
	defer conn.Close()
	deadline := time.After(waitFor)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				return
			}
		case <-deadline:
			t.Fatal("client never saw its session expire")
		}
	}
}

// go-zookeeper's four-letter-word helper against a listener that uses
// FourLetterWord to tell the word from a frame, as the server will.
func TestGoZookeeperFourLetterWord(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	seen := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(waitFor))
		p, err := jute.NewFrameReader(c, 0).ReadPrefix()
		if err != nil {
			return
		}
		w, _ := jute.FourLetterWord(p)
		seen <- w
		if w == "ruok" {
			_, _ = c.Write([]byte("imok"))
		}
	}()
	oks := zk.FLWRuok([]string{ln.Addr().String()}, waitFor)
	require.Equal(t, []bool{true}, oks)
	require.Equal(t, "ruok", await(t, seen))
}
