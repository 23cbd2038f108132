package main

// The three systems of compare failover: how each is asked for its leader and
// health, and its writers (each with its own client listing every node).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// askAll runs ask on every endpoint at once.
func askAll(eps []string, ask func(ep string) nodeStatus) []nodeStatus {
	out := make([]nodeStatus, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() { out[i] = ask(ep) })
	}
	wg.Wait()
	return out
}

// corral: corral's own Go client (client/), all endpoints, Timeout = the per-operation timeout.

type corralGap struct{ eps []string }

func newCorralGap(eps []string) *corralGap { return &corralGap{eps: eps} }

func (*corralGap) name() string { return "corral" }
func (*corralGap) close()       {}

func (s *corralGap) nodes(ctx context.Context) []nodeStatus {
	return askAll(s.eps, func(ep string) nodeStatus {
		st := nodeStatus{endpoint: ep}
		cl, err := client.New(client.Config{Endpoints: []string{ep}, Timeout: time.Second})
		if err != nil {
			st.err = err
			return st
		}
		cs, err := cl.Cluster(ctx)
		if err != nil {
			st.err = err
			return st
		}
		if cs.LeaderID != 0 {
			st.view = strconv.FormatUint(cs.LeaderID, 10)
		}
		st.leader = cs.LeaderID != 0 && cs.NodeID == cs.LeaderID
		return st
	})
}

func (*corralGap) prepare(context.Context, int) error { return nil }

type corralGapWriter struct {
	cl  *client.Client
	key string
}

func (s *corralGap) newGapWriter(i int, timeout time.Duration) (gapWriter, error) {
	cl, err := client.New(client.Config{Endpoints: s.eps, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return &corralGapWriter{cl: cl, key: "gap/w" + strconv.Itoa(i)}, nil
}

func (w *corralGapWriter) put(ctx context.Context, value []byte) error {
	_, err := w.cl.Put(ctx, w.key, value)
	return err
}

func (*corralGapWriter) close() {}

// etcd: clientv3 with every endpoint (its balancer moves to another when one fails).

type etcdGap struct {
	eps []string
	adm *clientv3.Client // for Status
}

func newEtcdGap(eps []string) (*etcdGap, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return &etcdGap{eps: eps, adm: c}, nil
}

func (*etcdGap) name() string { return "etcd" }
func (s *etcdGap) close()     { _ = s.adm.Close() }

func (s *etcdGap) nodes(ctx context.Context) []nodeStatus {
	return askAll(s.eps, func(ep string) nodeStatus {
		st := nodeStatus{endpoint: ep}
		r, err := s.adm.Status(ctx, ep)
		if err != nil {
			st.err = err
			return st
		}
		if r.Leader != 0 {
			st.view = strconv.FormatUint(r.Leader, 16)
		}
		st.leader = r.Leader != 0 && r.Header != nil && r.Header.MemberId == r.Leader
		return st
	})
}

func (*etcdGap) prepare(context.Context, int) error { return nil }

type etcdGapWriter struct {
	c   *clientv3.Client
	key string
}

func (s *etcdGap) newGapWriter(i int, _ time.Duration) (gapWriter, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: s.eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return &etcdGapWriter{c: c, key: "gap/w" + strconv.Itoa(i)}, nil
}

func (w *etcdGapWriter) put(ctx context.Context, value []byte) error {
	_, err := w.c.Put(ctx, w.key, string(value))
	return err
}

func (w *etcdGapWriter) close() { _ = w.c.Close() }

// ZooKeeper: go-zookeeper with every server; the srvr four-letter word for the mode.

type zkGap struct{ eps []string }

func newZKGap(eps []string) *zkGap { return &zkGap{eps: eps} }

func (*zkGap) name() string { return "zk" }
func (*zkGap) close()       {}

// srvrMode asks a ZooKeeper server for its mode (leader, follower, standalone) with the srvr four-letter word.
func srvrMode(ctx context.Context, ep string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", ep)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(conn)
	var first string
	for sc.Scan() {
		if first == "" {
			first = sc.Text()
		}
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("srvr named no mode (%q)", first)
}

func (s *zkGap) nodes(ctx context.Context) []nodeStatus {
	return askAll(s.eps, func(ep string) nodeStatus {
		st := nodeStatus{endpoint: ep}
		mode, err := srvrMode(ctx, ep)
		switch {
		case err != nil:
			st.err = err
		case mode == "leader" || mode == "follower":
			st.view = "quorum" // srvr does not name the leader; healthy() still wants exactly one
			st.leader = mode == "leader"
		default:
			st.err = fmt.Errorf("mode %s", mode)
		}
		return st
	})
}

func (s *zkGap) prepare(ctx context.Context, writers int) error {
	c, err := zkConnect(s.eps)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, p := range append([]string{"/gap"}, zkGapPaths(writers)...) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

func zkGapPaths(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "/gap/w" + strconv.Itoa(i)
	}
	return out
}

// zkGapWriter: go-zookeeper has no per-request timeout, so each setData runs in a goroutine and put gives up on it
// at ctx's deadline (its outcome is then unknown, and it is not counted even if it succeeds later). At most
// zkInFlight of a writer's requests are outstanding; go-zookeeper fails them all when its connection drops.
type zkGapWriter struct {
	c     *zk.Conn
	path  string
	slots chan struct{}
}

const zkInFlight = 16

func (s *zkGap) newGapWriter(i int, _ time.Duration) (gapWriter, error) {
	c, err := zkConnect(s.eps)
	if err != nil {
		return nil, err
	}
	return &zkGapWriter{c: c, path: zkGapPaths(i + 1)[i], slots: make(chan struct{}, zkInFlight)}, nil
}

func (w *zkGapWriter) put(ctx context.Context, value []byte) error {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.c.Set(w.path, value, -1)
		<-w.slots
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *zkGapWriter) close() { w.c.Close() }
