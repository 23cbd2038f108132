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
	"net/http"
	"strconv"
	"time"

	"github.com/corral-dev/corral/client"
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
	c, err := zkSession(ctx, s.eps, false)
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
		c, err := zkSession(ctx, []string{ep}, false)
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

// zkSession opens a session on one of servers, waiting for it until ctx is done. With oneRound it gives up as soon
// as every server has been tried once: go-zookeeper then sleeps 1 s before its next round, and an attempt that
// sleeps through the moment a server starts serving would measure the client, not the server.
func zkSession(ctx context.Context, servers []string, oneRound bool) (*zk.Conn, error) {
	c, ev, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		return nil, err
	}
	tried := 0
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c, nil
			}
			// go-zookeeper announces StateConnecting before each server it tries; the one after the last server is
			// the start of the next round (and of its 1 s sleep).
			if e.State == zk.StateConnecting {
				if tried++; oneRound && tried > len(servers) {
					go c.Close()
					return nil, errors.New("no session: every server refused or closed the connection")
				}
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

// zkAttempt runs op on a session made for this attempt, on any of the servers; the session is closed after.
func (s *zkRestart) zkAttempt(ctx context.Context, op func(*zk.Conn) error) error {
	c, err := zkSession(ctx, s.eps, true)
	if err != nil {
		return err
	}
	err = zkCall(ctx, c, func() error { return op(c) })
	go c.Close() // closeSession is not part of the attempt
	return err
}

func (s *zkRestart) read(ctx context.Context, valueSize int) error {
	return s.zkAttempt(ctx, func(c *zk.Conn) error {
		// getData alone may be answered by a server behind the leader; sync first makes it linearizable.
		if _, err := c.Sync("/" + restartKey(0)); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		b, _, err := c.Get("/" + restartKey(0))
		if err != nil {
			return fmt.Errorf("getData: %w", err)
		}
		return checkValue(len(b), valueSize)
	})
}

func (s *zkRestart) write(ctx context.Context, value []byte) error {
	return s.zkAttempt(ctx, func(c *zk.Conn) error {
		_, err := c.Set("/"+restartProbeKey, value, -1)
		return err
	})
}
