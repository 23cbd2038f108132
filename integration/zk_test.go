package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// The ZooKeeper port against real controller processes, driven by a
// ZooKeeper client no one here wrote (github.com/go-zookeeper/zk).

// zkCluster is a 3-controller cluster serving the ZooKeeper protocol on
// every controller.
type zkCluster struct {
	*cluster
	zkAddr map[uint64]string
}

func newZKCluster(t *testing.T, extra ...string) *zkCluster {
	t.Helper()
	c := &zkCluster{cluster: newCluster(t, 3, extra...), zkAddr: map[uint64]string{}}
	for id, n := range c.nodes {
		c.zkAddr[id] = freeAddr(t)
		n.extra = append(append([]string{}, n.extra...), "--zk-addr="+c.zkAddr[id], "--zk-min-session-timeout=2s")
	}
	c.startAll()
	c.waitLeader(30 * time.Second)
	return c
}

// addrs lists the ZooKeeper addresses of ids (all controllers if none).
func (c *zkCluster) addrs(ids ...uint64) []string {
	if len(ids) == 0 {
		ids = []uint64{1, 2, 3}
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, c.zkAddr[id])
	}
	return out
}

// controllerOf names the controller whose ZooKeeper address is addr.
func (c *zkCluster) controllerOf(addr string) uint64 {
	for id, a := range c.zkAddr {
		if a == addr {
			return id
		}
	}
	return 0
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkClient is a go-zookeeper client whose session events are recorded.
type zkClient struct {
	*zk.Conn
	mu      sync.Mutex
	expired bool
}

func (z *zkClient) sawExpiry() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.expired
}

// zkConnect connects a go-zookeeper client and waits for its session.
func zkConnect(t *testing.T, servers []string, timeout time.Duration) *zkClient {
	t.Helper()
	conn, events, err := zk.Connect(servers, timeout, zk.WithLogger(zkQuiet{}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	z := &zkClient{Conn: conn}
	has := make(chan struct{})
	go func() {
		once := sync.Once{}
		for ev := range events {
			switch ev.State {
			case zk.StateHasSession:
				once.Do(func() { close(has) })
			case zk.StateExpired:
				z.mu.Lock()
				z.expired = true
				z.mu.Unlock()
			}
		}
	}()
	select {
	case <-has:
	case <-time.After(30 * time.Second):
		t.Fatalf("no ZooKeeper session with %v within 30s", servers)
	}
	return z
}

// A session outlives the death of the controller it is connected to and
// of the leader: the client reconnects to another controller with the
// same session id and password, its ephemeral node stays, and it writes
// again. A second client sees it all from whichever controller it uses.
func TestZK_SessionSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("real controller processes")
	}
	c := newZKCluster(t)
	conn := zkConnect(t, c.addrs(), 6*time.Second)
	other := zkConnect(t, c.addrs(), 6*time.Second)
	sid := conn.SessionID()
	_, err := conn.Create("/svc", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Create("/svc/me", []byte("0"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	for i := range 4 {
		victim := c.controllerOf(conn.Server())
		what := "the client's controller"
		if i%2 == 1 {
			victim, what = c.waitLeader(30*time.Second), "the leader"
		}
		c.kill(victim)
		t.Logf("round %d: killed controller %d, %s (client on %d)", i, victim, what, c.controllerOf(conn.Server()))
		// The write is retried through the reconnect: go-zookeeper
		// answers ConnectionLoss while it moves.
		val := []byte(fmt.Sprint(i + 1))
		require.Eventually(t, func() bool {
			_, err := conn.Set("/svc/me", val, -1)
			return err == nil
		}, 30*time.Second, 50*time.Millisecond, "round %d: the session never wrote again", i)
		require.Equal(t, sid, conn.SessionID(), "the session id must be kept across controllers")
		require.NotEqual(t, victim, c.controllerOf(conn.Server()))
		require.Eventually(t, func() bool {
			if _, err := other.Sync("/svc/me"); err != nil {
				return false
			}
			data, st, err := other.Get("/svc/me")
			return err == nil && string(data) == string(val) && st.EphemeralOwner == sid
		}, 30*time.Second, 50*time.Millisecond, "round %d: another client must see the write and the owner", i)
		c.start(victim)
		c.waitLeader(30 * time.Second)
	}
	require.False(t, conn.sawExpiry(), "a live session must never expire across failovers")
	require.False(t, other.sawExpiry())
}

// A client that dies (kill -9 of a real kazoo process) loses its session
// when the timeout passes, decided by the leader: its ephemeral node goes,
// and a watch on it fires for a client on another controller.
func TestZK_DeadClientsSessionExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("real controller processes")
	}
	c := newZKCluster(t, "--enable-pprof")
	watcher := zkConnect(t, c.addrs(2), 6*time.Second)
	script := `
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=3)
zk.start(timeout=20)
zk.create("/gone", b"x", ephemeral=True)
print("created", flush=True)
time.sleep(600)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, c.zkAddr[3])
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start(), "needs Debian's python3-kazoo (./.ci/run installs it)")
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 7)
	_, err = out.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "created", string(buf))

	ok, _, ch, err := watcher.ExistsW("/gone")
	require.NoError(t, err)
	require.True(t, ok, "the ephemeral node must exist while its session lives")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	select {
	case ev := <-ch:
		require.Equal(t, zk.EventNodeDeleted, ev.Type)
		require.Equal(t, "/gone", ev.Path)
		t.Logf("the dead client's session expired and its node went %v after the kill", time.Since(killed).Round(time.Millisecond))
	case <-time.After(60 * time.Second):
		c.dumpZNodeViews(t, "/gone")
		t.Fatal("the dead client's ephemeral node was never deleted, or its watch never fired")
	}
	ok, _, err = watcher.Exists("/gone")
	require.NoError(t, err)
	require.False(t, ok)
}

// Watches fire across controllers: a client on controller 1 watches data,
// existence and children; a client on controller 3 makes the changes.
func TestZK_WatchesAcrossControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("real controller processes")
	}
	c := newZKCluster(t)
	a := zkConnect(t, c.addrs(1), 6*time.Second)
	b := zkConnect(t, c.addrs(3), 6*time.Second)
	_, err := b.Create("/w", []byte("0"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = a.Sync("/w")
	require.NoError(t, err)
	_, _, dataW, err := a.GetW("/w")
	require.NoError(t, err)
	_, _, kidsW, err := a.ChildrenW("/w")
	require.NoError(t, err)
	_, _, existW, err := a.ExistsW("/w/k")
	require.NoError(t, err)

	_, err = b.Set("/w", []byte("1"), 0)
	require.NoError(t, err)
	_, err = b.Create("/w/k", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for _, w := range []struct {
		ch   <-chan zk.Event
		typ  zk.EventType
		path string
	}{{dataW, zk.EventNodeDataChanged, "/w"}, {kidsW, zk.EventNodeChildrenChanged, "/w"}, {existW, zk.EventNodeCreated, "/w/k"}} {
		select {
		case ev := <-w.ch:
			require.Equal(t, w.typ, ev.Type)
			require.Equal(t, w.path, ev.Path)
		case <-time.After(20 * time.Second):
			t.Fatalf("no %v event for %s", w.typ, w.path)
		}
	}
}

// Porcupine model of a znode used as a register: reads (after sync) see
// the last write; a conditional write applies only at its version.
type zregState struct {
	value   string
	version int32 // -1: unknown (after a write of unknown outcome)
}

type zregInput struct {
	write   bool
	value   string
	version int32
}

type zregOutput struct {
	unknown bool
	ok      bool // write: applied (false: BadVersion)
	value   string
	version int32
}

var zregModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{zregState{value: "init", version: 0}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(zregState), input.(zregInput), output.(zregOutput)
		if !in.write {
			if out.value != s.value || (s.version != -1 && out.version != s.version) {
				return nil
			}
			s.version = out.version
			return []interface{}{s}
		}
		match := s.version == -1 || s.version == in.version
		switch {
		case out.unknown && match:
			next := zregState{value: in.value, version: -1}
			if s.version != -1 {
				next.version = s.version + 1
			}
			return []interface{}{s, next}
		case out.unknown:
			return []interface{}{s}
		case out.ok:
			if !match || out.version != in.version+1 {
				return nil
			}
			return []interface{}{zregState{value: in.value, version: out.version}}
		default: // BadVersion: the version must really differ
			if s.version == in.version {
				return nil
			}
			return []interface{}{s}
		}
	},
	Equal: func(a, b interface{}) bool { return a.(zregState) == b.(zregState) },
}

// A znode used as a register through real ZooKeeper clients stays
// linearizable (reads after sync, writes conditional on the version)
// while the leader is killed with -9 and paused with SIGSTOP.
func TestZK_RegisterLinearizableUnderLeaderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection test")
	}
	c := newZKCluster(t)
	setup := zkConnect(t, c.addrs(), 6*time.Second)
	_, err := setup.Create("/reg", []byte("init"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	var (
		mu  sync.Mutex
		ops []porcupine.Operation
		wg  sync.WaitGroup
	)
	for id := range 4 {
		cl := zkConnect(t, c.addrs(), 6*time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(id), 11))
			var lastVersion int32
			for seq := 0; ctx.Err() == nil; seq++ {
				var (
					in  zregInput
					out zregOutput
					err error
				)
				call := now()
				if rng.IntN(2) == 0 {
					in = zregInput{write: true, value: fmt.Sprintf("c%d-%d", id, seq), version: lastVersion}
					var st *zk.Stat
					st, err = cl.Set("/reg", []byte(in.value), in.version)
					switch {
					case err == nil:
						out, lastVersion = zregOutput{ok: true, version: st.Version}, st.Version
					case errors.Is(err, zk.ErrBadVersion):
						err, out = nil, zregOutput{ok: false}
					}
				} else {
					if _, err = cl.Sync("/reg"); err == nil {
						var data []byte
						var st *zk.Stat
						data, st, err = cl.Get("/reg")
						if err == nil {
							out = zregOutput{value: string(data), version: st.Version}
							lastVersion = st.Version
						}
					}
				}
				ret := now()
				switch {
				case err == nil:
				case !in.write:
					continue // a failed read has no effect
				default:
					out, ret = zregOutput{unknown: true}, math.MaxInt64
				}
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	faults := 0
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-ctx.Done():
		case <-time.After(3 * time.Second): // spacing between faults
		}
		if ctx.Err() != nil {
			break
		}
		lead := c.waitMajorityLeader(20 * time.Second)
		n := c.nodes[lead]
		if i%2 == 0 {
			c.kill(lead)
			t.Logf("fault %d: kill -9 leader %d", i, lead)
			time.Sleep(time.Second) // downtime of the killed leader
			c.start(lead)
		} else {
			require.NoError(t, n.cmd.Process.Signal(syscall.SIGSTOP))
			t.Logf("fault %d: SIGSTOP leader %d", i, lead)
			time.Sleep(2 * time.Second) // pause length
			require.NoError(t, n.cmd.Process.Signal(syscall.SIGCONT))
		}
		faults++
	}
	wg.Wait()
	require.GreaterOrEqual(t, faults, 4)
	var writes, reads int
	for _, op := range ops {
		if op.Input.(zregInput).write {
			writes++
		} else {
			reads++
		}
	}
	t.Logf("checking %d reads and %d conditional writes", reads, writes)
	require.Positive(t, writes)
	require.Positive(t, reads)
	res := porcupine.CheckOperationsTimeout(zregModel.ToModel(), ops, 60*time.Second)
	require.Equal(t, porcupine.Ok, res, "the znode register history is not linearizable (or the check timed out)")
}

// The register model must reject a stale read and a lost update, or the
// check above proves nothing.
func TestZK_RegisterModelRejectsViolations(t *testing.T) {
	op := func(c int, in zregInput, out zregOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret}
	}
	stale := []porcupine.Operation{
		op(0, zregInput{write: true, value: "a", version: 0}, zregOutput{ok: true, version: 1}, 0, 10),
		op(1, zregInput{}, zregOutput{value: "init", version: 0}, 20, 30),
	}
	require.False(t, porcupine.CheckOperations(zregModel.ToModel(), stale))
	lost := []porcupine.Operation{
		op(0, zregInput{write: true, value: "a", version: 0}, zregOutput{ok: true, version: 1}, 0, 10),
		op(1, zregInput{write: true, value: "b", version: 0}, zregOutput{ok: true, version: 1}, 20, 30),
	}
	require.False(t, porcupine.CheckOperations(zregModel.ToModel(), lost))
}

// With --zk-tls-cert the port speaks only TLS (ZooKeeper's
// secureClientPort): a client that verifies the cluster's CA works, a
// plain-TCP client gets no session.
func TestZK_TLSPort(t *testing.T) {
	if testing.Short() {
		t.Skip("real controller processes")
	}
	c := &zkCluster{cluster: newCluster(t, 3), zkAddr: map[uint64]string{}}
	for id, n := range c.nodes {
		c.zkAddr[id] = freeAddr(t)
		n.extra = append(n.extra, "--zk-addr="+c.zkAddr[id],
			"--zk-tls-cert="+filepath.Join(n.tlsDir, transport.NodeFile), "--zk-tls-key="+filepath.Join(n.tlsDir, transport.NodeKeyFile))
	}
	c.startAll()
	c.waitLeader(30 * time.Second)
	caPEM, err := os.ReadFile(filepath.Join(c.caDir(), transport.CAFile))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	dialTLS := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
	}
	conn, events, err := zk.Connect(c.addrs(), 6*time.Second, zk.WithDialer(dialTLS), zk.WithLogger(zkQuiet{}))
	require.NoError(t, err)
	defer conn.Close()
	go func() {
		for range events {
		}
	}()
	require.Eventually(t, func() bool {
		_, err := conn.Create("/tls", []byte("secret"), 0, zk.WorldACL(zk.PermAll))
		return err == nil || errors.Is(err, zk.ErrNodeExists)
	}, 30*time.Second, 50*time.Millisecond, "no write over TLS")
	data, _, err := conn.Get("/tls")
	require.NoError(t, err)
	require.Equal(t, "secret", string(data))

	plain, plainEvents, err := zk.Connect(c.addrs(1), 3*time.Second, zk.WithLogger(zkQuiet{}))
	require.NoError(t, err)
	defer plain.Close()
	deadline := time.After(5 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-plainEvents:
			require.NotEqual(t, zk.StateHasSession, ev.State, "a plain-TCP client got a session on the TLS port")
		case <-deadline:
			done = true
		}
	}
}
