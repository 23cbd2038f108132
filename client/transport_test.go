package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connServer is an httptest server that counts the connections it accepted
// and can close the idle ones.
type connServer struct {
	*httptest.Server
	accepted atomic.Int64
	mu       sync.Mutex
	conns    map[net.Conn]http.ConnState
	changed  chan struct{} // a connection changed state (waitConns)
}

func newConnServer(t *testing.T, h http.Handler) *connServer {
	t.Helper()
	s := &connServer{conns: map[net.Conn]http.ConnState{}, changed: make(chan struct{}, 1)}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		s.mu.Lock()
		defer s.mu.Unlock()
		defer func() {
			select {
			case s.changed <- struct{}{}:
			default:
			}
		}()
		if st == http.StateNew {
			s.accepted.Add(1)
		}
		if st == http.StateClosed || st == http.StateHijacked {
			delete(s.conns, c)
			return
		}
		s.conns[c] = st
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// closeIdle closes every connection the server holds, as its idle timeout
// or a restart would. The caller has read its answers; the server may not
// have marked the connections idle yet, so it waits for that first.
func (s *connServer) closeIdle(t *testing.T) {
	t.Helper()
	s.waitConns(t, func(st http.ConnState) bool { return st == http.StateIdle })
	s.Config.SetKeepAlivesEnabled(false) // closes idle connections
	s.Config.SetKeepAlivesEnabled(true)
	s.waitConns(t, func(http.ConnState) bool { return false })
}

// waitConns waits until every open connection's state satisfies ok,
// checking again on each state change.
func (s *connServer) waitConns(t *testing.T, ok func(http.ConnState) bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		bad := 0
		for _, st := range s.conns {
			if !ok(st) {
				bad++
			}
		}
		s.mu.Unlock()
		if bad == 0 {
			return
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			t.Fatalf("%d connections not in the state waited for", bad)
		}
	}
}

func directClient(t *testing.T) (*http.Client, *directTransport) {
	t.Helper()
	if !directSupported {
		t.Skip("no direct transport on this platform")
	}
	dt := newDirectTransport(http.DefaultTransport.(*http.Transport).Clone())
	t.Cleanup(dt.CloseIdleConnections)
	return &http.Client{Transport: dt}, dt
}

func okHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s %d", r.Method, r.URL.Path, len(body))
}

func doText(t *testing.T, hc *http.Client, method, url, body string) string {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDirect_ReusesOneConnection(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(okHandler))
	hc, _ := directClient(t)
	for i := range 50 {
		if got, want := doText(t, hc, http.MethodPut, srv.URL+"/k", strings.Repeat("v", i)), fmt.Sprintf("PUT /k %d", i); got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("50 sequential requests used %d connections, want 1", n)
	}
}

// A pooled connection the server has closed (idle timeout, restart,
// failover) must not fail the next request, even one that is not safe to
// resend: the transport sees the close before it writes.
func TestDirect_ServerClosedIdleConnection(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(okHandler))
	hc, _ := directClient(t)
	doText(t, hc, http.MethodPost, srv.URL+"/a", "x")
	for i := range 3 {
		srv.closeIdle(t)
		if got := doText(t, hc, http.MethodPost, srv.URL+"/b", "yy"); got != "POST /b 2" {
			t.Fatalf("after the server closed the idle connection (%d): answer %q", i, got)
		}
	}
	if n := srv.accepted.Load(); n != 4 {
		t.Fatalf("%d connections, want 4 (one per close)", n)
	}
}

func TestDirect_ContextEndsABlockedCall(t *testing.T) {
	release := make(chan struct{})
	srv := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		okHandler(w, r)
	}))
	defer close(release)
	hc, _ := directClient(t)
	doText(t, hc, http.MethodGet, srv.URL+"/fast", "")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/slow", strings.NewReader("v"))
	errc := make(chan error, 1)
	go func() {
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	// The connection that carried it is not reused: its answer may still come.
	srv.nextCallDials(t, hc, "/fast", 2)
}

// nextCallDials checks that a GET of path answers and that the server has
// then accepted want connections in all.
func (s *connServer) nextCallDials(t *testing.T, hc *http.Client, path string, want int64) {
	t.Helper()
	if got := doText(t, hc, http.MethodGet, s.URL+path, ""); got != "GET "+path+" 0" {
		t.Fatalf("next call: %q", got)
	}
	if n := s.accepted.Load(); n != want {
		t.Fatalf("%d connections, want %d", n, want)
	}
}

// A body closed before its end leaves the rest of the answer on the wire:
// that connection is closed, not pooled.
func TestDirect_BodyClosedEarly(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20))
			return
		}
		okHandler(w, r)
	}))
	hc, _ := directClient(t)
	resp, err := hc.Get(srv.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.nextCallDials(t, hc, "/small", 2)
}

func TestDirect_ConnectionCloseIsHonoured(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		okHandler(w, r)
	}))
	hc, dt := directClient(t)
	for range 3 {
		doText(t, hc, http.MethodGet, srv.URL+"/x", "")
	}
	if n := srv.accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
	dt.mu.Lock()
	defer dt.mu.Unlock()
	for k, pool := range dt.idle {
		if len(pool) > 0 {
			t.Fatalf("%d pooled connections to %s after Connection: close", len(pool), k)
		}
	}
}

// A body that is a stream (the lease keep-alive stream writes while it
// reads) goes to net/http, which can do both at once.
func TestDirect_StreamingBodyGoesToTheFallback(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		buf := make([]byte, 64)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				_ = rc.Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	hc, _ := directClient(t)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/stream", pr)
	resp, err := hc.Do(req) // answers before the body ends: only a full-duplex transport gets here
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, msg := range []string{"ping", "pong"} {
		if _, err := pw.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != msg {
			t.Fatalf("echo %q: %q, %v", msg, got, err)
		}
	}
	pw.Close()
}

func TestDirect_DialErrorIsADialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	hc, _ := directClient(t)
	_, err = hc.Post("http://"+addr+"/k", "text/plain", strings.NewReader("v"))
	if !isDialError(err) {
		t.Fatalf("error %v: the Client would not try the next endpoint", err)
	}
}

func TestDirect_ConcurrentCallersShareThePool(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(okHandler))
	hc, dt := directClient(t)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				body := strings.Repeat("v", g+i)
				req, _ := http.NewRequest(http.MethodPut, srv.URL+"/c", strings.NewReader(body))
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("PUT /c %d", len(body)); string(b) != want {
					t.Errorf("answer %q, want %q: answers crossed between callers", b, want)
				}
			}
		})
	}
	wg.Wait()
	if n := srv.accepted.Load(); n > 16 {
		t.Fatalf("16 callers opened %d connections", n)
	}
	if n := pooled(dt, srv); n == 0 || int64(n) > srv.accepted.Load() {
		t.Fatalf("%d pooled connections after the calls, %d accepted", n, srv.accepted.Load())
	}
}

// failingBody fails its first read: the request cannot be written whole.
type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, errors.New("body source failed") }
func (failingBody) Close() error             { return nil }

// A request that could not be written whole on a pooled connection is sent
// once more on a new connection (the server got no complete request), and
// no more.
func TestDirect_UnwrittenRequestIsResentOnce(t *testing.T) {
	var hits atomic.Int64
	srv := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request whose body did not arrive whole is not one: the API
		// reads a body to its end before it acts on it.
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		hits.Add(1)
	}))
	hc, _ := directClient(t)
	doText(t, hc, http.MethodGet, srv.URL+"/warm", "") // one pooled connection
	var rewinds atomic.Int64
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/k", failingBody{})
	req.ContentLength = 3
	req.GetBody = func() (io.ReadCloser, error) { rewinds.Add(1); return failingBody{}, nil }
	if _, err := hc.Do(req); err == nil || !strings.Contains(err.Error(), "body source failed") {
		t.Fatalf("error %v, want the body's", err)
	}
	if n := rewinds.Load(); n != 1 {
		t.Fatalf("body rewound %d times, want 1 (one resend)", n)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("server got %d complete requests, want only the first GET", n)
	}
}

// A server may answer before it has read the whole body (a value over its
// limit) and close the connection: the caller gets that answer, as with
// net/http, not the error of the write the close cut short.
func TestDirect_EarlyAnswerToALargeBody(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = io.CopyN(io.Discard, r.Body, 1024)
			w.Header().Set("Connection", "close")
			http.Error(w, `{"error":"value is too large","code":"too_large"}`, http.StatusRequestEntityTooLarge)
			return
		}
		okHandler(w, r)
	}))
	hc, _ := directClient(t)
	for range 3 {
		doText(t, hc, http.MethodGet, srv.URL+"/warm", "")
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/big", bytes.NewReader(make([]byte, 32<<20)))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("PUT of a body the server refuses: %v, want its 413", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
	}
}

// pooled is how many idle connections the transport holds to srv.
func pooled(dt *directTransport, srv *connServer) int {
	dt.mu.Lock()
	defer dt.mu.Unlock()
	return len(dt.idle["http://"+srv.Listener.Addr().String()])
}

// More callers at once than the pool keeps: the connections beyond
// maxIdlePerHost are closed when their calls end, not pooled.
func TestDirect_PoolKeepsAtMostMaxIdle(t *testing.T) {
	const callers = maxIdlePerHost + 6
	arrived, release := make(chan struct{}, callers), make(chan struct{})
	srv := newConnServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		okHandler(w, r)
	}))
	hc, dt := directClient(t)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() { doText(t, hc, http.MethodGet, srv.URL+"/held", "") })
	}
	for range callers { // every call holds its own connection
		<-arrived
	}
	close(release)
	wg.Wait()
	if n := pooled(dt, srv); n != maxIdlePerHost {
		t.Fatalf("%d pooled connections after %d calls at once, want %d", n, callers, maxIdlePerHost)
	}
}

// A connection idle for idleExpiry is closed rather than used.
func TestDirect_IdleConnectionExpires(t *testing.T) {
	srv := newConnServer(t, http.HandlerFunc(okHandler))
	hc, dt := directClient(t)
	doText(t, hc, http.MethodGet, srv.URL+"/a", "")
	dt.mu.Lock()
	for _, dc := range dt.idle["http://"+srv.Listener.Addr().String()] {
		dc.idleAt = dc.idleAt.Add(-idleExpiry) // as if idle that long
	}
	dt.mu.Unlock()
	srv.nextCallDials(t, hc, "/b", 2)
	if n := pooled(dt, srv); n != 1 {
		t.Fatalf("%d pooled connections, want the new one only", n)
	}
}
