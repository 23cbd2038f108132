package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// testStream is a raw KV stream client: frames are built by hand here, so
// the test checks the wire format itself rather than the Go client's view
// of it.
type testStream struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
	hint string
}

func openTestStream(t *testing.T, url, token string) (*testStream, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	req := "GET /v1/kvstream HTTP/1.1\r\nHost: " + strings.TrimPrefix(url, "http://") +
		"\r\nConnection: Upgrade\r\nUpgrade: " + StreamProtocol + "\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	_, err = io.WriteString(conn, req+"\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	return &testStream{t: t, conn: conn, br: br}, resp
}

func streamFrame(id uint32, op, flags byte, key string, rest ...[]byte) []byte {
	n := streamHeaderBytes + len(key)
	for _, r := range rest {
		n += len(r)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(n))
	b = binary.BigEndian.AppendUint32(b, id)
	b = append(b, op, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(len(key)))
	b = append(b, key...)
	for _, r := range rest {
		b = append(b, r...)
	}
	return b
}

type testAnswer struct {
	id     uint32
	status int
	hint   string
	body   []byte
}

func (s *testStream) send(frames ...[]byte) {
	s.t.Helper()
	var all []byte
	for _, f := range frames {
		all = append(all, f...)
	}
	_, err := s.conn.Write(all)
	require.NoError(s.t, err)
}

func (s *testStream) read() (testAnswer, error) {
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var l [4]byte
	if _, err := io.ReadFull(s.br, l[:]); err != nil {
		return testAnswer{}, err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	if _, err := io.ReadFull(s.br, b); err != nil {
		return testAnswer{}, err
	}
	h := int(b[6])
	return testAnswer{id: binary.BigEndian.Uint32(b), status: int(binary.BigEndian.Uint16(b[4:])),
		hint: string(b[7 : 7+h]), body: b[7+h:]}, nil
}

func (s *testStream) ask(frame []byte) testAnswer {
	s.t.Helper()
	s.send(frame)
	a, err := s.read()
	require.NoError(s.t, err)
	require.Equal(s.t, binary.BigEndian.Uint32(frame[4:]), a.id)
	return a
}

func (a testAnswer) ints(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(a.body[8*i:]))
	}
	return out
}

func (a testAnswer) requireError(t *testing.T, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, a.status, string(a.body))
	var m map[string]any
	require.NoError(t, json.Unmarshal(a.body, &m), string(a.body))
	require.Equal(t, code, m["code"], string(a.body))
	require.NotEmpty(t, m["error"])
	return m
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func TestKVStream_OpsAsTheHTTPRoutesServeThem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httptest.NewServer(f.srv.Handler())
	defer srv.Close()
	s, resp := openTestStream(t, srv.URL, "")
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)

	a := s.ask(streamFrame(1, streamPut, 0, "app/a", []byte("one")))
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	require.Equal(t, []int64{1}, a.ints(1))
	a = s.ask(streamFrame(2, streamGet, 0, "app/a"))
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, []int64{1, 1, 1, 1}, a.ints(4)) // revision, create, mod, version
	require.Equal(t, "one", string(a.body[32:]))

	// A stale compare is a 409 with the revision to retry from; the right
	// one succeeds.
	m := s.ask(streamFrame(3, streamPut, streamHasPrev, "app/a", i64(7), []byte("x"))).requireError(t, http.StatusConflict, "compare_failed")
	require.EqualValues(t, 1, m["mod_revision"])
	a = s.ask(streamFrame(4, streamPut, streamHasPrev, "app/a", i64(1), []byte("two")))
	require.Equal(t, []int64{2}, a.ints(1))
	a = s.ask(streamFrame(5, streamGet, streamSerializable, "app/a"))
	require.Equal(t, "two", string(a.body[32:]))

	// Bad frames are answered with the HTTP route's error; the stream goes on.
	s.ask(streamFrame(6, streamPut, 0, "_corral/x", []byte("v"))).requireError(t, http.StatusBadRequest, "bad_request")
	s.ask(streamFrame(7, 9, 0, "app/a")).requireError(t, http.StatusBadRequest, "bad_request")
	s.ask(streamFrame(8, streamPut, 0, "app/big", make([]byte, MaxValueBytes+1))).requireError(t, http.StatusRequestEntityTooLarge, "too_large")
	s.ask(streamFrame(9, streamGet, 0, "")).requireError(t, http.StatusBadRequest, "bad_request")
	s.ask(streamFrame(10, streamGet, 0, "app/a", []byte("junk"))).requireError(t, http.StatusBadRequest, "bad_request")
	s.ask(streamFrame(11, streamPut, streamHasPrev, "app/a", []byte("1234"))).requireError(t, http.StatusBadRequest, "bad_request")
	bad := streamFrame(12, streamGet, 0, "app/a")
	binary.BigEndian.PutUint16(bad[10:], 200) // a key longer than the frame
	s.ask(bad).requireError(t, http.StatusBadRequest, "bad_request")
	_, ok := f.store.state.Get("app/big")
	require.False(t, ok, "a refused frame changes nothing")
	require.EqualValues(t, 2, f.store.state.Revision())

	a = s.ask(streamFrame(13, streamDelete, 0, "app/a"))
	require.Equal(t, []int64{3, 1}, a.ints(2))
	s.ask(streamFrame(14, streamGet, 0, "app/a")).requireError(t, http.StatusNotFound, "not_found")

	// Many frames in one write: every one is answered, by its id.
	var frames [][]byte
	for i := range 300 {
		frames = append(frames, streamFrame(uint32(100+i), streamPut, 0, "many/k", []byte("v")))
	}
	s.send(frames...)
	seen := map[uint32]bool{}
	for range 300 {
		a, err := s.read()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, a.status)
		seen[a.id] = true
	}
	require.Len(t, seen, 300)
	require.EqualValues(t, 303, f.store.state.Revision())
}

func TestKVStream_FramesThatCannotBeReadCloseTheStream(t *testing.T) {
	t.Parallel()
	for name, frame := range map[string][]byte{
		"too large":    binary.BigEndian.AppendUint32(nil, maxStreamFrame+1),
		"no header":    {0, 0, 0, 3, 1, 2, 3},
		"cut short":    {0, 0, 0, 20, 1},
		"zero length":  {0, 0, 0, 0},
		"length alone": {0, 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			srv := httptest.NewServer(f.srv.Handler())
			defer srv.Close()
			s, resp := openTestStream(t, srv.URL, "")
			require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
			s.send(frame)
			if name == "cut short" || name == "length alone" {
				_ = s.conn.(*net.TCPConn).CloseWrite() // the client leaves mid-frame
			}
			_, err := s.read()
			require.Error(t, err, "the stream ends")
			require.EqualValues(t, 0, f.store.state.Revision())
		})
	}
}

func TestKVStream_UpgradeIsRequired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	requireAnswer(t, f.do("GET", "/v1/kvstream", ""), http.StatusUpgradeRequired, "upgrade_required")
	requireAnswer(t, f.do("GET", "/v1/kvstream", "", "Upgrade", "websocket", "Connection", "Upgrade"),
		http.StatusUpgradeRequired, "upgrade_required")
}

func TestKVStream_EveryFrameIsCheckedAgainstTheToken(t *testing.T) {
	t.Parallel()
	f, root := aclFixture(t)
	srv := httptest.NewServer(f.srv.Handler())
	defer srv.Close()
	app := f.token(t, root, "app", `[{"resource": "kv", "prefix": "app/", "access": "write"}]`)

	_, resp := openTestStream(t, srv.URL, "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token, no stream")
	_, resp = openTestStream(t, srv.URL, "corral-acl-nope")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	s, resp := openTestStream(t, srv.URL, app)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.Equal(t, http.StatusOK, s.ask(streamFrame(1, streamPut, 0, "app/x", []byte("1"))).status)
	m := s.ask(streamFrame(2, streamPut, 0, "other/x", []byte("1"))).requireError(t, http.StatusForbidden, "permission_denied")
	require.Equal(t, map[string]any{"resource": "kv", "access": "write", "name": "other/x"}, m["permission"])
	s.ask(streamFrame(3, streamDelete, 0, "other/x")).requireError(t, http.StatusForbidden, "permission_denied")
	s.ask(streamFrame(4, streamGet, 0, "other/x")).requireError(t, http.StatusForbidden, "permission_denied")
	_, ok := f.store.state.Get("other/x")
	require.False(t, ok)

	// The token is deleted while the stream is open: its next frame is
	// refused as a new request would be.
	f.deleteToken(t, root, "app")
	s.ask(streamFrame(5, streamPut, 0, "app/x", []byte("2"))).requireError(t, http.StatusUnauthorized, "unauthorized")
	kv, _ := f.store.state.Get("app/x")
	require.Equal(t, "1", string(kv.Value))
}

func TestKVStream_FollowerNamesTheLeaderAndShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(f *fixture) {
		f.cluster.leader = 2
		f.cluster.httpAddrs[2] = "10.0.0.2:8080"
	})
	srv := httptest.NewServer(f.srv.Handler())
	defer srv.Close()
	s, resp := openTestStream(t, srv.URL, "")
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.Equal(t, "10.0.0.2:8080", resp.Header.Get(LeaderHeader))
	a := s.ask(streamFrame(1, streamPut, 0, "k", []byte("v")))
	require.Equal(t, "10.0.0.2:8080", a.hint)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, f.srv.Shutdown(ctx))
	_, err := s.read()
	require.Error(t, err, "Shutdown closes open streams")
}

// A stream holds at most maxStreamInFlightBytes of frames being served:
// the next frame waits for one to be answered.
func TestKVStream_InFlightBytesAreBounded(t *testing.T) {
	t.Parallel()
	f := inFlight{freed: make(chan struct{}, 1)}
	done := make(chan struct{})
	require.True(t, f.acquire(done, maxStreamInFlightBytes-10))
	got := make(chan bool, 1)
	go func() { got <- f.acquire(done, 100) }()
	select {
	case <-got:
		t.Fatal("a frame past the byte bound was let in")
	default:
	}
	f.release(maxStreamInFlightBytes - 10)
	require.True(t, <-got)
	require.True(t, f.acquire(done, 100), "small frames fit beside each other")
	close(done)
	require.True(t, f.acquire(done, 1), "under both bounds nothing waits")
	require.False(t, f.acquire(done, maxStreamInFlightBytes), "past the bound, a closed stream stops waiting")
}

// A client that sends gets and never reads the answers loses its stream
// once maxStreamPending bytes of answers wait, rather than the server
// holding them until the write times out.
func TestKVStream_UnreadAnswersEndTheStream(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	_, err := fx.store.Propose(context.Background(), &metadata.Command{Op: metadata.OpPut, Key: "big", Value: make([]byte, MaxValueBytes)})
	require.NoError(t, err)
	server, client := net.Pipe() // unbuffered: a write blocks until the client reads, which it never does
	defer client.Close()
	var in []byte
	for i := range 2 * maxStreamPending / MaxValueBytes {
		in = append(in, streamFrame(uint32(i+1), streamGet, streamSerializable, "big")...)
	}
	req := httptest.NewRequest("GET", "/v1/kvstream", nil)
	req.Pattern = "GET /v1/kvstream"
	st := fx.srv.newKVStream(server, req)
	go st.serve(bufio.NewReader(bytes.NewReader(in)))
	// The deadline is generous (a loaded CI machine under -race took over
	// 5 s to serve the gets); what matters is why the stream broke: the
	// pending bound, not the write timeout, which would break it too.
	require.Eventually(t, func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.broken
	}, 3*streamWriteTimeout, 10*time.Millisecond, "the stream kept unread answers")
	st.mu.Lock()
	defer st.mu.Unlock()
	require.True(t, st.unread, "the stream broke on its write timeout, not on the bound of unread answers")
}

// As HTTP reads: a stream's linearizable get is judged again on the state
// its read made current (an ACL bootstrap this follower had not applied
// when the frame came), and a refusal first catches up (a grant made a
// moment ago).
func TestKVStream_JudgedOnCaughtUpState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, resp := openTestStream(t, serveFixture(t, f), "")
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode, "ACLs off: anyone")
	f.store.catchUpOnRead(func() {
		rec := f.do("POST", "/v1/acl/bootstrap", "", "X-Corral-Client", "test")
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	})
	s.ask(streamFrame(1, streamGet, 0, "x")).requireError(t, http.StatusUnauthorized, "unauthorized")

	g, root := aclFixture(t)
	tok := g.token(t, root, "narrow", `[{"resource": "kv", "prefix": "a", "access": "read"}]`)
	gs, resp := openTestStream(t, serveFixture(t, g), tok)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	g.store.catchUpOnRead(func() {
		rec := g.as(root, "PUT", "/v1/acl/policies/narrow", `{"rules": [{"resource": "kv", "access": "read"}]}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	})
	gs.ask(streamFrame(2, streamGet, streamSerializable, "b")).requireError(t, http.StatusNotFound, "not_found")
}

// serveFixture serves f's API over HTTP until the test ends.
func serveFixture(t *testing.T, f *fixture) string {
	t.Helper()
	srv := httptest.NewServer(f.srv.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
