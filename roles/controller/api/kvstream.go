package api

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/metadata"
	"github.com/prometheus/client_golang/prometheus"
)

// The KV stream (GET /v1/kvstream with "Upgrade: corral-kv/1") carries
// puts, gets and deletes as binary frames over one connection, many in
// flight at once and answered out of order (kvstream_wire.go has the
// format). It exists for speed: an HTTP request costs client and server
// more CPU than the operation it carries on a busy cluster
// (docs/PERFORMANCE.md, "The KV stream"), while a stream's reads and
// writes carry as many frames as are ready. The semantics are the HTTP
// routes': the same validation, quotas, errors and statuses, and the
// caller's token is checked again for every frame, against the key it
// names, as if each frame were its own request.

// StreamProtocol is the Upgrade token of the KV stream.
const StreamProtocol = "corral-kv/1"

const (
	// maxStreamInFlight and maxStreamInFlightBytes bound the frames one
	// stream has being served, and their bytes (eight of the largest
	// requests); the stream reads no further frame until one is answered,
	// so a client that sends faster than the cluster commits is slowed by
	// TCP.
	maxStreamInFlight      = 256
	maxStreamInFlightBytes = 8 * maxStreamFrame
	// maxStreamPending bounds the answers waiting behind a write under way:
	// past it the client is not reading them, and loses its stream.
	maxStreamPending = 16 << 20
	// streamWriteTimeout bounds one write of answers: a client that stops
	// reading loses its stream instead of holding the server's goroutines.
	streamWriteTimeout = 10 * time.Second
)

// handleKVStream upgrades the connection to a KV stream and serves it
// until the client leaves, the stream idles for IdleTimeout, a frame is
// malformed beyond answering, or the server stops.
func (s *Server) handleKVStream(w http.ResponseWriter, r *http.Request) (any, error) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), StreamProtocol) || !headerHas(r.Header, "Connection", "upgrade") {
		return nil, httpError(http.StatusUpgradeRequired, "upgrade_required",
			"this route switches the connection to the KV stream: send Connection: Upgrade and Upgrade: %s (docs/API.md, \"KV stream\")", StreamProtocol)
	}
	if r.ProtoMajor != 1 {
		return nil, badRequest("the KV stream needs an HTTP/1.1 connection, this one is HTTP/%d", r.ProtoMajor)
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, badRequest("this connection cannot be switched to the KV stream: %v", err)
	}
	st := s.newKVStream(conn, r)
	if !s.streams.add(st) {
		_ = conn.Close() // the server is shutting down
		return nil, nil
	}
	defer s.streams.remove(st)
	_ = conn.SetDeadline(time.Time{}) // net/http's deadlines were for the upgrade request
	hint := s.leaderAPIAddr()
	head := "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + StreamProtocol + "\r\n"
	if hint != "" {
		head += LeaderHeader + ": " + hint + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		_ = conn.Close()
		return nil, nil
	}
	var in io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 { // frames sent right behind the upgrade
		b, _ := brw.Reader.Peek(n)
		in = io.MultiReader(strings.NewReader(string(b)), conn)
	}
	st.serve(bufio.NewReaderSize(in, 64<<10))
	return nil, nil
}

// headerHas reports whether h's comma-separated name header lists token.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// kvStream is one upgraded connection.
type kvStream struct {
	s    *Server
	conn net.Conn
	// req is the upgrade request: its token is resolved again for every
	// frame (identify), so a token deleted or expired meanwhile stops
	// working on an open stream as on new requests.
	req    *http.Request
	ctx    context.Context
	cancel context.CancelFunc
	flight inFlight
	wg     sync.WaitGroup

	mu      sync.Mutex
	out     []byte // answers waiting for the writer
	spare   []byte
	writing bool
	broken  bool
	// unread: broken because the client left maxStreamPending of answers
	// unread, not by a failed write (tests tell the two apart).
	unread bool
}

func (s *Server) newKVStream(conn net.Conn, r *http.Request) *kvStream {
	ctx, cancel := context.WithCancel(context.Background())
	return &kvStream{s: s, conn: conn, req: r.WithContext(ctx), ctx: ctx, cancel: cancel,
		flight: inFlight{freed: make(chan struct{}, 1)}}
}

// inFlight counts a stream's frames being served and their bytes.
type inFlight struct {
	mu     sync.Mutex
	frames int
	bytes  int
	freed  chan struct{} // one pending wake-up is enough
}

// acquire waits until one more frame of n bytes fits, or done closes.
func (f *inFlight) acquire(done <-chan struct{}, n int) bool {
	for {
		f.mu.Lock()
		if f.frames < maxStreamInFlight && (f.frames == 0 || f.bytes+n <= maxStreamInFlightBytes) {
			f.frames++
			f.bytes += n
			f.mu.Unlock()
			return true
		}
		f.mu.Unlock()
		select {
		case <-f.freed:
		case <-done:
			return false
		}
	}
}

// release returns a frame of n bytes.
func (f *inFlight) release(n int) {
	f.mu.Lock()
	f.frames--
	f.bytes -= n
	f.mu.Unlock()
	select {
	case f.freed <- struct{}{}:
	default:
	}
}

// close ends the stream: the reader stops, proposals in flight lose their
// context (their outcome is the cluster's, as for an HTTP client that
// leaves), and the connection closes.
func (st *kvStream) close() {
	st.cancel()
	_ = st.conn.Close()
}

// serve reads frames until the stream ends, then waits for the frames in
// flight to be answered (or fail to be) before closing.
func (st *kvStream) serve(br *bufio.Reader) {
	defer func() {
		st.wg.Wait()
		st.close()
	}()
	if stop := st.s.stopc; stop != nil {
		go func() {
			select {
			case <-stop: // the controller stops: so does the stream
				st.close()
			case <-st.ctx.Done():
			}
		}()
	}
	idle := cmp.Or(st.s.cfg.IdleTimeout, DefaultIdleTimeout)
	body := cmp.Or(st.s.cfg.ReadTimeout, DefaultReadTimeout)
	var lenBuf [4]byte
	for {
		_ = st.conn.SetReadDeadline(time.Now().Add(idle))
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				st.s.log.Debug("KV stream ended", "remote", st.conn.RemoteAddr().String(), "err", err)
			}
			return
		}
		n := binary.BigEndian.Uint32(lenBuf[:])
		if n > maxStreamFrame {
			st.s.log.Warn("KV stream closed: frame too large", "remote", st.conn.RemoteAddr().String(),
				"bytes", n, "limit", maxStreamFrame)
			return
		}
		if n < streamHeaderBytes { // not even an id to answer
			st.s.log.Warn("KV stream closed: frame shorter than a request header", "remote", st.conn.RemoteAddr().String(), "bytes", n)
			return
		}
		if !st.flight.acquire(st.ctx.Done(), int(n)) {
			return
		}
		if int(n) > br.Buffered() {
			_ = st.conn.SetReadDeadline(time.Now().Add(body))
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(br, frame); err != nil {
			st.flight.release(int(n))
			st.s.log.Debug("KV stream ended inside a frame", "remote", st.conn.RemoteAddr().String(), "err", err)
			return
		}
		req, err := decodeStreamReq(frame)
		if err != nil {
			st.answerError(req.ID, streamOpName(req.Op), time.Now(), err)
			st.flight.release(int(n))
			continue
		}
		st.wg.Add(1)
		go st.do(req, int(n))
	}
}

// do serves one request frame of n bytes.
func (st *kvStream) do(req streamReq, n int) {
	defer func() {
		st.flight.release(n)
		st.wg.Done()
	}()
	start := time.Now()
	op := streamOpName(req.Op)
	body, err := st.s.streamOp(st.ctx, st.req, req)
	if err != nil {
		st.answerError(req.ID, op, start, err)
		return
	}
	st.answer(req.ID, op, start, http.StatusOK, body)
}

// streamOp runs one request as its HTTP route would and returns the 200
// body.
func (s *Server) streamOp(ctx context.Context, r *http.Request, req streamReq) ([]byte, error) {
	j, err := s.identify(r)
	if err != nil {
		return nil, err
	}
	if err := s.aclCurrent(r); err != nil { // identify skips it for the upgrade route
		return nil, err
	}
	id := j.id
	acc := metadata.ACLWrite
	if req.Op == streamGet {
		acc = metadata.ACLRead
	}
	check := writableKey
	if req.Op == streamGet {
		check = validateKey
	}
	if err := check(req.Key); err != nil {
		return nil, err
	}
	if !id.Allows(metadata.ACLKV, acc, req.Key) {
		allows := func(id *metadata.ACLIdentity) bool { return id.Allows(metadata.ACLKV, acc, req.Key) }
		nj, granted := s.grantedAfterCatchUp(r, allows)
		if !granted {
			return nil, denied(id, metadata.ACLKV, acc, &req.Key)
		}
		j = nj
	}
	// The frame's writes are fenced with the ACL revision it was judged
	// at, as an HTTP request's are (judged.into).
	ctx = j.into(ctx)
	switch req.Op {
	case streamPut:
		cmd := &metadata.Command{Op: metadata.OpPut, Key: req.Key, Value: req.Value, PrevRevision: req.Prev, HasPrev: req.HasPrev}
		res, err := s.propose(ctx, cmd, kvError)
		if err != nil {
			return nil, err
		}
		return appendInts(make([]byte, 0, 8), res.Revision), nil
	case streamDelete:
		res, err := s.deleteKey(ctx, req.Key)
		if err != nil {
			return nil, err
		}
		return appendInts(make([]byte, 0, 16), res.Revision, res.Deleted), nil
	}
	if req.Flags&streamSerializable == 0 {
		if err := s.store.LinearizableRead(ctx); err != nil {
			return nil, err
		}
		// Judged again on the state the read made current, as an HTTP
		// read is (reauthorize).
		j, err := s.identify(r)
		if err != nil {
			return nil, err
		}
		if !j.id.Allows(metadata.ACLKV, acc, req.Key) {
			return nil, denied(j.id, metadata.ACLKV, acc, &req.Key)
		}
	}
	st := s.store.State()
	kv, err := getKey(st, req.Key)
	if err != nil {
		return nil, err
	}
	out := appendInts(make([]byte, 0, 32+len(kv.Value)), st.Revision(), kv.CreateRevision, kv.ModRevision, kv.Version)
	return append(out, kv.Value...), nil
}

func streamOpName(op byte) string {
	switch op {
	case streamPut:
		return "put"
	case streamGet:
		return "get"
	case streamDelete:
		return "delete"
	}
	return "other"
}

func (st *kvStream) answerError(id uint32, op string, start time.Time, err error) {
	status, body := streamErrorBody(err)
	st.answer(id, op, start, status, body)
}

// answer queues an answer frame and writes the queue unless another
// goroutine is writing it already: answers that finish together leave in
// one write.
func (st *kvStream) answer(id uint32, op string, start time.Time, status int, body []byte) {
	st.s.streamObserver(op, status).Observe(time.Since(start).Seconds())
	hint := st.s.leaderAPIAddr()
	st.mu.Lock()
	if st.broken {
		st.mu.Unlock()
		return
	}
	st.out = appendStreamAnswer(st.out, id, status, hint, body)
	if st.writing {
		if len(st.out) > maxStreamPending { // the client is not reading its answers
			st.broken, st.unread = true, true
			st.out = nil
			st.mu.Unlock()
			st.s.log.Warn("KV stream closed: answers not read", "remote", st.conn.RemoteAddr().String(), "pending_limit", maxStreamPending)
			st.close()
			return
		}
		st.mu.Unlock()
		return
	}
	st.writing = true
	for len(st.out) > 0 {
		buf := st.out
		st.out = st.spare[:0]
		st.mu.Unlock()
		_ = st.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, err := st.conn.Write(buf)
		st.mu.Lock()
		if cap(buf) <= 1<<20 {
			st.spare = buf // keep one buffer of a usual size for the next swap
		}
		if err != nil {
			st.broken = true
			st.out = nil
			st.mu.Unlock()
			st.close()
			return
		}
	}
	st.writing = false
	st.mu.Unlock()
}

// streamObserver is the request-duration histogram of a stream op, under
// the route label "STREAM <op>".
func (s *Server) streamObserver(op string, status int) prometheus.Observer {
	return s.httpDuration.WithLabelValues("STREAM "+op, strconv.Itoa(status))
}

// kvStreams are the open streams, which Shutdown closes: net/http forgets
// a connection once it is hijacked.
type kvStreams struct {
	mu     sync.Mutex
	open   map[*kvStream]struct{}
	closed bool
}

func (ks *kvStreams) add(st *kvStream) bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.closed {
		return false
	}
	if ks.open == nil {
		ks.open = map[*kvStream]struct{}{}
	}
	ks.open[st] = struct{}{}
	return true
}

func (ks *kvStreams) remove(st *kvStream) {
	ks.mu.Lock()
	delete(ks.open, st)
	ks.mu.Unlock()
}

// closeAll closes every open stream and refuses new ones.
func (ks *kvStreams) closeAll() {
	ks.mu.Lock()
	ks.closed = true
	open := ks.open
	ks.open = nil
	ks.mu.Unlock()
	for st := range open {
		st.close()
	}
}
