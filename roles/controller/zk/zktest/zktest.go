// Package zktest starts real ZooKeeper 3.8 servers (Debian's zookeeper
// package) for tests, as net/http/httptest starts HTTP servers: a standalone
// server, or a quorum, on free ports of 127.0.0.1, killed by the test's
// cleanup.
//
// It exists so that the tests that check corral's ZooKeeper port, and the
// tools built on it, against the real thing (the jute codec's interop tests,
// `corral zk import`, the integration tests' ZooKeeper tools) share one
// setup: before it, the same zoo.cfg and JVM command were copied into three
// packages' tests and had to be kept in step by hand.
//
// Only tests import it (scripts/checkimports enforces that): it is an
// ordinary package because test code cannot be imported across packages.
// It needs java and /usr/share/java/zookeeper.jar (apt-get install
// zookeeper); without them Need and Start fail the test rather than skip it,
// so that a CI machine missing the package does not pass silently. Callers
// that should not start JVMs under -short skip before calling it.
package zktest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Jar is Debian's zookeeper package (3.8): the server, and zkCli
// (org.apache.zookeeper.ZooKeeperMain).
const Jar = "/usr/share/java/zookeeper.jar"

// startTimeout bounds how long a started server may take to serve: JVMs on a
// busy 2-core machine are slow to start.
const startTimeout = 90 * time.Second

// Need fails the test unless java and Jar are installed, and returns java's
// path. It never skips: a missing package must show up as a failure.
func Need(t testing.TB) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal("no java: apt-get install zookeeper (./.ci/run does), or run with -short to skip the tests that start ZooKeeper")
	}
	if _, err := os.Stat(Jar); err != nil {
		t.Fatal("no " + Jar + ": apt-get install zookeeper (./.ci/run does), or run with -short to skip the tests that start ZooKeeper")
	}
	return java
}

// Ensemble is a started ZooKeeper: one standalone server, or a quorum.
type Ensemble struct {
	// Addrs are the client addresses, one per server (index i is server
	// i+1 of zoo.cfg): a connect string is strings.Join(Addrs, ",").
	Addrs   []string
	servers []*server
}

// server is one ZooKeeper JVM.
type server struct {
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the JVM has exited and its log is closed
}

// Option changes what Start does.
type Option func(*config)

type config struct {
	onFailure func(server int, logPath string)
}

// OnFailure has the cleanup call f for each server, once its JVM has exited,
// when the test failed: to keep its log (zookeeper.log in the test's
// temporary directory, which the testing package removes) as an artifact.
// The cleanup logs the last lines of each log anyway.
func OnFailure(f func(server int, logPath string)) Option {
	return func(c *config) { c.onFailure = f }
}

// Start starts servers ZooKeeper servers and returns once each serves:
// standalone (ZooKeeperServerMain) for one, a quorum (QuorumPeerMain) for
// more. Their data and logs are in t.TempDir(); the test's cleanup kills
// them and, if the test failed, logs the last lines of each log.
//
// The settings are those the tests rely on: tickTime=500 (sessions of 1 s
// and quick elections), every four-letter word allowed (srvr is how it
// tells serving from listening), no admin server (it would want a port),
// session timeouts from 1 s to 60 s, TTL nodes on
// (zookeeper.extendedTypesEnabled) and a small heap.
func Start(t testing.TB, servers int, opts ...Option) *Ensemble {
	t.Helper()
	if servers < 1 {
		t.Fatalf("zktest.Start: %d servers", servers)
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	java := Need(t)
	dir := t.TempDir()
	type ports struct{ client, quorum, election string }
	ps := make([]ports, servers)
	for i := range ps {
		ps[i] = ports{freeAddr(t), freeAddr(t), freeAddr(t)}
	}
	main, heap := "org.apache.zookeeper.server.ZooKeeperServerMain", "-Xmx256m"
	var members strings.Builder
	if servers > 1 {
		main, heap = "org.apache.zookeeper.server.quorum.QuorumPeerMain", "-Xmx192m" // several JVMs on 2 cores
		for i, p := range ps {
			_, q, _ := net.SplitHostPort(p.quorum)
			_, e, _ := net.SplitHostPort(p.election)
			fmt.Fprintf(&members, "server.%d=127.0.0.1:%s:%s\n", i+1, q, e)
		}
	}
	e := &Ensemble{}
	// Registered before any JVM starts, so that a failure below still
	// kills those already started.
	t.Cleanup(func() {
		for i, s := range e.servers {
			_ = s.cmd.Process.Kill() // the JVMs this test started
			<-s.exited
			if t.Failed() {
				if cfg.onFailure != nil {
					cfg.onFailure(i, s.logPath)
				}
				t.Logf("--- last log lines of ZooKeeper %d ---\n%s", i+1, lastLines(s.logPath, 30))
			}
		}
	})
	for i, p := range ps {
		sdir := filepath.Join(dir, fmt.Sprintf("zk-%d", i+1))
		data := filepath.Join(sdir, "data")
		mkdir(t, data)
		write(t, filepath.Join(data, "myid"), strconv.Itoa(i+1)+"\n")
		_, port, _ := net.SplitHostPort(p.client)
		conf := filepath.Join(sdir, "zoo.cfg")
		write(t, conf, "tickTime=500\n"+
			"initLimit=20\nsyncLimit=5\n"+
			"dataDir="+data+"\n"+
			"clientPort="+port+"\n"+
			"clientPortAddress=127.0.0.1\n"+
			"admin.enableServer=false\n"+
			"4lw.commands.whitelist=*\n"+
			"minSessionTimeout=1000\nmaxSessionTimeout=60000\n"+
			members.String())
		s := &server{logPath: filepath.Join(sdir, "zookeeper.log"), exited: make(chan struct{})}
		logf, err := os.Create(s.logPath)
		if err != nil {
			t.Fatal(err)
		}
		s.cmd = exec.Command(java,
			"-Dzookeeper.extendedTypesEnabled=true", // TTL nodes
			"-Dzookeeper.log.dir="+sdir, heap,
			"-cp", Jar, main, conf)
		s.cmd.Stdout, s.cmd.Stderr = logf, logf
		if err := s.cmd.Start(); err != nil {
			logf.Close()
			t.Fatalf("start ZooKeeper %d: %v", i+1, err)
		}
		go func() {
			_ = s.cmd.Wait()
			logf.Close()
			close(s.exited)
		}()
		e.servers = append(e.servers, s)
		e.Addrs = append(e.Addrs, p.client)
	}
	for _, a := range e.Addrs {
		WaitServing(t, a, startTimeout)
	}
	return e
}

// LogPaths returns each server's log file, in the order of Addrs. The files
// are in the test's temporary directory: gone once the test ends.
func (e *Ensemble) LogPaths() []string {
	paths := make([]string, len(e.servers))
	for i, s := range e.servers {
		paths[i] = s.logPath
	}
	return paths
}

// Leader returns the index in Addrs of the server that leads now, polling
// srvr for "Mode: leader" for up to a minute (a quorum that just lost its
// leader takes a few ticks to elect one). A standalone server is its own
// leader.
func (e *Ensemble) Leader(t testing.TB) int {
	t.Helper()
	if len(e.servers) == 1 {
		return 0
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		for i, a := range e.Addrs {
			if out, err := FourLetters(a, "srvr"); err == nil && strings.Contains(out, "Mode: leader") {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no ZooKeeper server says it leads (srvr) within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill kills server i (an index in Addrs) with SIGKILL, as a crash would,
// and returns once its JVM is gone.
func (e *Ensemble) Kill(t testing.TB, i int) {
	t.Helper()
	if i < 0 || i >= len(e.servers) {
		t.Fatalf("zktest: no server %d of %d", i, len(e.servers))
	}
	_ = e.servers[i].cmd.Process.Kill()
	<-e.servers[i].exited
}

// WaitServing polls a ZooKeeper-protocol server with srvr until it serves,
// failing the test after timeout: listening is not serving (a ZooKeeper
// loading its database, or a quorum member without a leader, drops connect
// requests and answers srvr that it is not serving requests).
func WaitServing(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := FourLetters(addr, "srvr")
		if err == nil && strings.Contains(out, "Mode: ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ZooKeeper service on %s within %s: %v %q", addr, timeout, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FourLetters sends a four-letter word to addr and returns the whole answer
// (the server closes the connection after it).
func FourLetters(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	out, err := io.ReadAll(c)
	return string(out), err
}

// freeAddr returns a free port on 127.0.0.1. The port is closed again
// before ZooKeeper binds it: another process could take it meanwhile, a
// race the tests accept (ZooKeeper has no "port 0" for the quorum ports).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// lastLines returns the last n lines of the file at path, or why it cannot.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
