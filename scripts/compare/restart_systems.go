package main

// The three systems of compare restart: the load's clients, and the probes
// that find the first read and write after a restart, each through a client
// made for that one attempt.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/roles/controller/zk/jute"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// The load's keys (corral and etcd: restartKey(i); ZooKeeper: "/"+restartKey(i)) and the key the probe writes.
func restartKey(i int) string { return "restart/k" + strconv.Itoa(i) }

const restartProbeKey = "restart-probe"

// corral: its own Go client (client/).

type corralRestart struct{ eps []string }

func (*corralRestart) name() string          { return "corral" }
func (s *corralRestart) endpoints() []string { return s.eps }
func (s *corralRestart) health() (gapSystem, error) {
	return newCorralGap(s.eps), nil
}
func (*corralRestart) prepare(context.Context, []byte) error { return nil }

// openLoad: three clients, client j trying endpoint j first (the others only when j cannot be reached), writer w
// using client w%3, so that the load is spread over the nodes as etcd's and ZooKeeper's is.
func (s *corralRestart) openLoad() (func(ctx context.Context, w, i int, value []byte) error, func(), error) {
	var cls []*client.Client
	for j := range s.eps {
		eps := append(append([]string{}, s.eps[j:]...), s.eps[:j]...)
		cl, err := client.New(client.Config{Endpoints: eps, Timeout: -1})
		if err != nil {
			return nil, nil, err
		}
		cls = append(cls, cl)
	}
	put := func(ctx context.Context, w, i int, value []byte) error {
		_, err := cls[w%len(cls)].Put(ctx, restartKey(i), value)
		return err
	}
	return put, func() {}, nil
}

// probeHTTP has no idle connections: each attempt dials anew, as a client started after the restart would.
var probeHTTP = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true, DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func (s *corralRestart) probeClient() (*client.Client, error) {
	// Timeout -1: the attempt's context is the only bound.
	return client.New(client.Config{Endpoints: s.eps, Timeout: -1, HTTPClient: probeHTTP})
}

func (s *corralRestart) read(ctx context.Context, valueSize int) error {
	cl, err := s.probeClient()
	if err != nil {
		return err
	}
	kv, err := cl.Get(ctx, restartKey(0)) // linearizable unless client.Serializable() is given
	if err != nil {
		return err
	}
	return checkValue(len(kv.Value), valueSize)
}

func (s *corralRestart) write(ctx context.Context, value []byte) error {
	cl, err := s.probeClient()
	if err != nil {
		return err
	}
	_, err = cl.Put(ctx, restartProbeKey, value)
	return err
}

func checkValue(got, want int) error {
	if got != want {
		return fmt.Errorf("%s has %d bytes, want %d", restartKey(0), got, want)
	}
	return nil
}

// etcd: clientv3.

type etcdRestart struct{ eps []string }

func (*etcdRestart) name() string          { return "etcd" }
func (s *etcdRestart) endpoints() []string { return s.eps }

// health: a new client each time, since one kept across the restart would wait out gRPC's reconnect backoff.
func (s *etcdRestart) health() (gapSystem, error) { return newEtcdGap(s.eps) }

func (*etcdRestart) prepare(context.Context, []byte) error { return nil }

func newEtcdClient(eps []string, dial time.Duration, opts ...grpc.DialOption) (*clientv3.Client, error) {
	// No client log: the attempts that fail while the nodes start would each log a retry.
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: dial, Logger: zap.NewNop(), DialOptions: opts})
}

// etcdProbeDial redials a refused endpoint within 50 ms instead of gRPC's default backoff (1 s, growing). clientv3
// waits for a ready connection (WaitForReady), so with the default an attempt begun before the node listened would
// sleep through the moment it starts serving; a smoke run saw successes 60-150 ms after etcd's "ready to serve".
var etcdProbeDial = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 50 * time.Millisecond},
	MinConnectTimeout: time.Second,
})

// openLoad: client j pinned to endpoint j, writer w using client w%3.
func (s *etcdRestart) openLoad() (func(ctx context.Context, w, i int, value []byte) error, func(), error) {
	var cls []*clientv3.Client
	closeAll := func() {
		for _, c := range cls {
			_ = c.Close()
		}
	}
	for _, ep := range s.eps {
		c, err := newEtcdClient([]string{ep}, 5*time.Second)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cls = append(cls, c)
	}
	put := func(ctx context.Context, w, i int, value []byte) error {
		_, err := cls[w%len(cls)].Put(ctx, restartKey(i), string(value))
		return err
	}
	return put, closeAll, nil
}

// etcdAttempt runs op with a client of every endpoint made for this attempt (its balancer picks one that is up).
func (s *etcdRestart) etcdAttempt(ctx context.Context, op func(*clientv3.Client) error) error {
	dl, ok := ctx.Deadline()
	if !ok {
		return errors.New("an etcd attempt needs a deadline")
	}
	c, err := newEtcdClient(s.eps, time.Until(dl), etcdProbeDial)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return op(c)
}

func (s *etcdRestart) read(ctx context.Context, valueSize int) error {
	return s.etcdAttempt(ctx, func(c *clientv3.Client) error {
		r, err := c.Get(ctx, restartKey(0)) // linearizable: clientv3's default
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 {
			return fmt.Errorf("%s not found", restartKey(0))
		}
		return checkValue(len(r.Kvs[0].Value), valueSize)
	})
}

func (s *etcdRestart) write(ctx context.Context, value []byte) error {
	return s.etcdAttempt(ctx, func(c *clientv3.Client) error {
		_, err := c.Put(ctx, restartProbeKey, string(value))
		return err
	})
}

// ZooKeeper: go-zookeeper.

type zkRestart struct{ eps []string }

func (*zkRestart) name() string                 { return "zk" }
func (s *zkRestart) endpoints() []string        { return s.eps }
func (s *zkRestart) health() (gapSystem, error) { return newZKGap(s.eps), nil }

func (s *zkRestart) prepare(ctx context.Context, value []byte) error {
	c, err := zkSession(ctx, s.eps)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, p := range []string{"/restart", "/" + restartProbeKey} {
		if _, err := c.Create(p, value, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// openLoad: session j on server j, writer w using session w%3 (go-zookeeper pipelines a session's requests).
func (s *zkRestart) openLoad() (func(ctx context.Context, w, i int, value []byte) error, func(), error) {
	var cs []*zk.Conn
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
	}
	for _, ep := range s.eps {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		c, err := zkSession(ctx, []string{ep})
		cancel()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cs = append(cs, c)
	}
	put := func(ctx context.Context, w, i int, value []byte) error {
		c := cs[w%len(cs)]
		return zkCall(ctx, c, func() error {
			_, err := c.Create("/"+restartKey(i), value, 0, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				return nil // an earlier try that timed out here did create it
			}
			return err
		})
	}
	return put, closeAll, nil
}

// zkSession opens a session on one of servers, waiting for it until ctx is done.
func zkSession(ctx context.Context, servers []string) (*zk.Conn, error) {
	c, ev, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		return nil, err
	}
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c, nil
			}
		case <-ctx.Done():
			go c.Close() // Close waits up to 1 s for closeSession, and there is no session to close
			return nil, fmt.Errorf("no session: %w", ctx.Err())
		}
	}
}

// zkCall runs op, giving up on it when ctx is done (go-zookeeper has no per-request timeout; its outcome is then
// unknown).
func zkCall(ctx context.Context, c *zk.Conn, op func() error) error {
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// zkProbe opens a session on the first of servers that gives one and sends reqs (each a header and a body) in
// order, returning each reply's body; then it sends closeSession and hangs up without waiting. It speaks the
// protocol itself (jute, as zksession.go does) rather than through go-zookeeper, whose Conn allocates a 1.5 MiB
// buffer and several goroutines per session and sleeps 1 s after trying every server: at a new attempt every 10 ms
// that took about a third of a core from the JVMs being timed (a ZooKeeper-only smoke run: 9.4 CPU-seconds for
// this program against 6.2 polling every 200 ms, and a first read 0.5-1 s later).
func zkProbe(ctx context.Context, servers []string, reqs ...[2]jute.Record) ([][]byte, error) {
	var errs []error
	for _, srv := range servers {
		out, err := zkProbeOne(ctx, srv, reqs)
		if err == nil {
			return out, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", srv, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func zkProbeOne(ctx context.Context, srv string, reqs [][2]jute.Record) ([][]byte, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", srv)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(5 * time.Second)
	}
	_ = c.SetDeadline(dl)
	connect := &jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, jute.PasswordLen)}
	if _, err := c.Write(jute.AppendFrame(nil, connect)); err != nil {
		return nil, err
	}
	fr := jute.NewFrameReader(c, 1<<20)
	body, err := fr.ReadFrame()
	if err != nil {
		return nil, fmt.Errorf("no session (the server is not serving yet): %w", err)
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(body, &resp); err != nil {
		return nil, err
	}
	if resp.SessionID == 0 {
		return nil, errors.New("no session: the server refused it")
	}
	var out [][]byte
	for i, r := range reqs {
		xid := int32(i + 1)
		hdr := *(r[0].(*jute.RequestHeader))
		hdr.Xid = xid
		if _, err := c.Write(jute.AppendFrame(nil, &hdr, r[1])); err != nil {
			return nil, err
		}
		for {
			body, err := fr.ReadFrame()
			if err != nil {
				return nil, fmt.Errorf("%s reply: %w", hdr.Type, err)
			}
			d := jute.NewDecoder(body)
			var h jute.ReplyHeader
			if err := h.Decode(d); err != nil {
				return nil, err
			}
			if h.Xid != xid {
				continue // a notification
			}
			if h.Err != 0 {
				return nil, fmt.Errorf("%s: %w", hdr.Type, h.Err)
			}
			out = append(out, body[d.Offset():])
			break
		}
	}
	// The session is not part of the attempt: end it rather than leave it to expire, but do not wait.
	_, _ = c.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: int32(len(reqs) + 1), Type: jute.OpCloseSession}))
	return out, nil
}

func (s *zkRestart) read(ctx context.Context, valueSize int) error {
	path := "/" + restartKey(0)
	// getData alone may be answered by a server behind the leader; sync first makes it linearizable.
	out, err := zkProbe(ctx, s.eps,
		[2]jute.Record{&jute.RequestHeader{Type: jute.OpSync}, &jute.PathRequest{Path: path}},
		[2]jute.Record{&jute.RequestHeader{Type: jute.OpGetData}, &jute.PathWatchRequest{Path: path}})
	if err != nil {
		return err
	}
	var data jute.GetDataResponse
	if err := jute.Decode(out[1], &data); err != nil {
		return fmt.Errorf("getData reply: %w", err)
	}
	return checkValue(len(data.Data), valueSize)
}

func (s *zkRestart) write(ctx context.Context, value []byte) error {
	_, err := zkProbe(ctx, s.eps,
		[2]jute.Record{&jute.RequestHeader{Type: jute.OpSetData}, &jute.SetDataRequest{Path: "/" + restartProbeKey, Data: value, Version: -1}})
	return err
}
