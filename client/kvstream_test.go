package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeStreamServer speaks the controller's side of the KV stream by hand
// (the API package is out of this package's reach): answer decides each
// frame's answer; a nil answer drops the connection instead.
type fakeStreamServer struct {
	srv       *httptest.Server
	upgrades  atomic.Int64
	frames    atomic.Int64
	httpCalls atomic.Int64
	answer    func(id uint32, op byte, key string) []byte
	refuse    bool // answer the upgrade 404, as a controller without the stream does
}

func newFakeStreamServer(t *testing.T, answer func(id uint32, op byte, key string) []byte) *fakeStreamServer {
	f := &fakeStreamServer{answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStreamServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/kvstream" {
		f.httpCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"revision": 7}`)
		return
	}
	f.upgrades.Add(1)
	if f.refuse || r.Header.Get("Upgrade") != streamProtocol || r.Header.Get(ClientHeader) == "" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error": "no route", "code": "not_found"}`)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+streamProtocol+"\r\n\r\n")
	for {
		var l [4]byte
		if _, err := io.ReadFull(brw, l[:]); err != nil {
			return
		}
		b := make([]byte, binary.BigEndian.Uint32(l[:]))
		if _, err := io.ReadFull(brw, b); err != nil {
			return
		}
		f.frames.Add(1)
		klen := int(binary.BigEndian.Uint16(b[6:]))
		out := f.answer(binary.BigEndian.Uint32(b), b[4], string(b[8:8+klen]))
		if out == nil {
			return
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

func (f *fakeStreamServer) host() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// answerFrame is an answer frame as the controller writes it.
func answerFrame(id uint32, status int, hint string, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(7+len(hint)+len(body)))
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint16(b, uint16(status))
	b = append(b, byte(len(hint)))
	b = append(b, hint...)
	return append(b, body...)
}

func revisionAnswer(rev int64, hint string) func(uint32, byte, string) []byte {
	return func(id uint32, _ byte, _ string) []byte {
		return answerFrame(id, http.StatusOK, hint, binary.BigEndian.AppendUint64(nil, uint64(rev)))
	}
}

func streamClient(t *testing.T, eps ...string) *Client {
	c, err := New(Config{Endpoints: eps, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStream_PutsShareOneStream(t *testing.T) {
	f := newFakeStreamServer(t, revisionAnswer(42, ""))
	c := streamClient(t, f.srv.URL)
	for range 5 {
		rev, err := c.Put(context.Background(), "k", []byte("v"))
		require.NoError(t, err)
		require.EqualValues(t, 42, rev)
	}
	require.EqualValues(t, 1, f.upgrades.Load())
	require.EqualValues(t, 5, f.frames.Load())
	require.EqualValues(t, 0, f.httpCalls.Load())
}

func TestStream_ControllerWithoutTheStreamGetsHTTP(t *testing.T) {
	f := newFakeStreamServer(t, revisionAnswer(1, ""))
	f.refuse = true
	c := streamClient(t, f.srv.URL)
	for range 3 {
		rev, err := c.Put(context.Background(), "k", []byte("v"))
		require.NoError(t, err)
		require.EqualValues(t, 7, rev) // the HTTP answer
	}
	require.EqualValues(t, 1, f.upgrades.Load(), "asked once, then HTTP")
	require.EqualValues(t, 3, f.httpCalls.Load())
}

func TestStream_ErrorAnswersAreTheHTTPErrors(t *testing.T) {
	f := newFakeStreamServer(t, func(id uint32, _ byte, _ string) []byte {
		return answerFrame(id, http.StatusConflict, "", []byte(`{"error": "compare failed", "code": "compare_failed", "mod_revision": 9}`))
	})
	c := streamClient(t, f.srv.URL)
	_, err := c.CompareAndPut(context.Background(), "k", []byte("v"), 3)
	require.ErrorIs(t, err, ErrCompareFailed)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.EqualValues(t, 9, e.ModRevision)
}

func TestStream_LeaderHintMovesTheNextCalls(t *testing.T) {
	leader := newFakeStreamServer(t, revisionAnswer(2, ""))
	follower := newFakeStreamServer(t, revisionAnswer(1, leader.host()))
	c := streamClient(t, follower.srv.URL, leader.srv.URL)
	rev, err := c.Put(context.Background(), "k", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 1, rev, "the first call is answered where it was sent")
	rev, err = c.Put(context.Background(), "k", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 2, rev, "the next goes to the leader the answer named")
}

func TestStream_RefusedDialTriesTheNextEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	ln.Close()
	f := newFakeStreamServer(t, revisionAnswer(5, ""))
	c := streamClient(t, dead, f.srv.URL)
	rev, err := c.Put(context.Background(), "k", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 5, rev)
}

// A stream that breaks after a put was written leaves the put's outcome
// unknown: it is not sent again elsewhere, where it could apply twice.
func TestStream_BrokenAfterTheFrameIsAnUnknownOutcome(t *testing.T) {
	broken := newFakeStreamServer(t, func(uint32, byte, string) []byte { return nil })
	other := newFakeStreamServer(t, revisionAnswer(5, ""))
	c := streamClient(t, broken.srv.URL, other.srv.URL)
	_, err := c.Put(context.Background(), "k", []byte("v"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "KV stream")
	require.EqualValues(t, 1, broken.frames.Load())
	require.EqualValues(t, 0, other.frames.Load()+other.httpCalls.Load(), "not resent elsewhere")
	// The next call opens a new stream.
	_, err = c.Put(context.Background(), "k", []byte("v"))
	require.Error(t, err)
	require.EqualValues(t, 2, broken.upgrades.Load())
}

// A call whose answer does not come in time fails with ErrTimeout; the
// stream stays usable, and the late answer is dropped.
func TestStream_TimeoutLeavesTheStreamUsable(t *testing.T) {
	release := make(chan struct{})
	f := newFakeStreamServer(t, func(id uint32, _ byte, key string) []byte {
		if key == "slow" {
			<-release
		}
		return answerFrame(id, http.StatusOK, "", binary.BigEndian.AppendUint64(nil, 3))
	})
	c, err := New(Config{Endpoints: []string{f.srv.URL}, Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Put(context.Background(), "slow", []byte("v"))
	require.ErrorIs(t, err, ErrTimeout)
	close(release)
	rev, err := c.Put(context.Background(), "fast", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 3, rev)
	require.EqualValues(t, 1, f.upgrades.Load())
}

// FuzzStreamAnswers feeds arbitrary bytes to a stream's reader as the
// controller's answers: it never panics, and every waiting call gets an
// answer or the stream's failure.
func FuzzStreamAnswers(f *testing.F) {
	f.Add(answerFrame(1, 200, "", binary.BigEndian.AppendUint64(nil, 1)))
	f.Add(answerFrame(2, 404, "h:1", []byte(`{"code": "not_found"}`)))
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{255, 255, 255, 255})
	f.Add(append(answerFrame(1, 200, "", nil), answerFrame(9, 200, "", nil)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		server, clientSide := net.Pipe()
		server.Close()
		kc := &kvConn{conn: clientSide, br: bufio.NewReader(bytes.NewReader(in)), pending: map[uint32]chan streamAnswer{}}
		ch1, ch2 := make(chan streamAnswer, 1), make(chan streamAnswer, 1)
		kc.pending[1], kc.pending[2] = ch1, ch2
		kc.readLoop(func() {})
		for _, ch := range []chan streamAnswer{ch1, ch2} {
			a := <-ch
			if a.err == nil && a.status == 200 && (a.id != 1 && a.id != 2) {
				t.Fatalf("answer %d delivered to another call", a.id)
			}
			_ = errors.Is(a.err, io.EOF)
		}
	})
}

// "No leader" on a stream is what it is over HTTP: nothing was proposed, so
// the call moves on to the next endpoint.
func TestStream_NoLeaderTriesTheNextEndpoint(t *testing.T) {
	leaderless := newFakeStreamServer(t, func(id uint32, _ byte, _ string) []byte {
		return answerFrame(id, http.StatusServiceUnavailable, "", []byte(`{"error": "no leader", "code": "no_leader"}`))
	})
	other := newFakeStreamServer(t, revisionAnswer(8, ""))
	c := streamClient(t, leaderless.srv.URL, other.srv.URL)
	rev, err := c.Put(context.Background(), "k", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 8, rev)
	require.EqualValues(t, 1, leaderless.frames.Load())
}

// An endpoint an environment proxy applies to gets HTTP: the stream never
// dials around the proxy. (http.ProxyFromEnvironment reads the environment
// once per process, so the pool is given the proxy function directly.)
func TestStream_ProxiedEndpointGetsHTTP(t *testing.T) {
	f := newFakeStreamServer(t, revisionAnswer(1, ""))
	other := newFakeStreamServer(t, revisionAnswer(1, ""))
	proxy := func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == f.host() {
			return url.Parse("http://proxy.test:3128")
		}
		return nil, nil
	}
	p := newStreamPool("", nil, []string{f.srv.URL, other.srv.URL}, proxy)
	defer p.closeAll()
	_, err := p.get(context.Background(), 0, f.srv.URL)
	require.ErrorIs(t, err, errNoStream)
	kc, err := p.get(context.Background(), 1, other.srv.URL)
	require.NoError(t, err)
	require.NotNil(t, kc)
	require.EqualValues(t, 0, f.upgrades.Load())
	require.EqualValues(t, 1, other.upgrades.Load())
}
