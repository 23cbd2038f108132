package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/roles/controller/zk/zktest"
)

// Clients no one here wrote, against every ZooKeeper-protocol target (issue 20, item 3): Debian's python3-kazoo
// running kazoo's recipes (testdata/zk/recipes.py), zkCli (ZooKeeperMain from Debian's zookeeper package) running
// testdata/zk/zkcli_script.txt, kazoo's lock and counter through a kill -9 of the leader, and `corral zk import`
// from a real ZooKeeper into the target.
//
// The targets are zkTargets' table. Today it holds a real ZooKeeper 3.8, which proves the scripts and their
// assertions right: what passes against ZooKeeper is ZooKeeper's behaviour, and corral (three controllers, each
// serving --zk-addr) must match it.
//
// They need java, /usr/share/java/zookeeper.jar (apt-get install zookeeper) and, for the recipes, python3-kazoo;
// without them they fail, unless -short skips them.

// zkTarget is a ZooKeeper-protocol server the tools run against.
type zkTarget struct {
	name string
	// start starts a target of the given number of servers (1, or 3 for the failover test) and registers its
	// cleanup with t.
	start func(t *testing.T, servers int) *zkEnsemble
}

// zkEnsemble is a started target.
type zkEnsemble struct {
	// addrs are the client addresses, one per server: a connect string is strings.Join(addrs, ",").
	addrs []string
	// leader returns the index in addrs of the server that leads now, waiting (with a deadline) for one to.
	leader func(t *testing.T) int
	// kill kills server i with SIGKILL and returns once it is gone.
	kill func(t *testing.T, i int)
}

// zkTargets lists the targets every test of this file runs against, each as a subtest named after it.
func zkTargets(t *testing.T) []zkTarget {
	t.Helper()
	if testing.Short() {
		t.Skip("ZooKeeper tools tests: skipped under -short (they start JVMs)")
	}
	return []zkTarget{
		{"zookeeper-3.8", startRealZK},
		{"corral", startCorralZK},
	}
}

// startCorralZK starts a corral cluster of servers controllers, each serving the ZooKeeper protocol on its own
// --zk-addr.
func startCorralZK(t *testing.T, servers int) *zkEnsemble {
	t.Helper()
	c := newCluster(t, servers)
	e := &zkEnsemble{}
	for i := 1; i <= servers; i++ {
		addr := freeAddr(t)
		n := c.nodes[uint64(i)]
		n.extra = append(append([]string{}, n.extra...), "--zk-addr="+addr)
		e.addrs = append(e.addrs, addr)
	}
	c.startAll()
	c.waitLeader(60 * time.Second)
	for _, a := range e.addrs {
		zktest.WaitServing(t, a, 60*time.Second)
	}
	e.leader = func(t *testing.T) int { return int(c.waitMajorityLeader(60*time.Second)) - 1 }
	e.kill = func(t *testing.T, i int) { c.kill(uint64(i + 1)) }
	return e
}

// needKazoo returns a python3 that imports kazoo: Debian's (/usr/bin/python3, where python3-kazoo installs it)
// first, then the one on PATH.
func needKazoo(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import kazoo").Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 with kazoo: apt-get install python3-kazoo, or run with -short to skip the ZooKeeper tools tests")
	return ""
}

// startRealZK starts Debian's ZooKeeper 3.8 (zktest.Start: standalone for one server, a quorum for more) and keeps
// each server's log as an artifact if the test fails.
func startRealZK(t *testing.T, servers int) *zkEnsemble {
	t.Helper()
	z := zktest.Start(t, servers, zktest.OnFailure(func(_ int, logPath string) { saveArtifact(t, logPath) }))
	return &zkEnsemble{
		addrs:  z.Addrs,
		leader: func(t *testing.T) int { return z.Leader(t) },
		kill:   func(t *testing.T, i int) { z.Kill(t, i) },
	}
}

// recipeLine is one JSON line of recipes.py: a recipe's result, or a progress event in --loop mode.
type recipeLine struct {
	Recipe  string   `json:"recipe"`
	OK      bool     `json:"ok"`
	Event   string   `json:"event"`
	Lock    int      `json:"lock"`
	Counter int      `json:"counter"`
	Errors  []string `json:"errors"`
	raw     string
}

// recipesRun is recipes.py running: its lines as they come, and its exit.
type recipesRun struct {
	lines  chan recipeLine // closed at EOF
	stderr *bytes.Buffer
	done   chan error // the exit, once lines is drained
	mu     sync.Mutex
	all    []string
}

func startRecipes(t *testing.T, py string, timeout time.Duration, args ...string) *recipesRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, py, append([]string{"testdata/zk/recipes.py"}, args...)...)
	r := &recipesRun{lines: make(chan recipeLine, 1024), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = r.stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel() // kills the script if the test ended first
		if t.Failed() {
			r.mu.Lock()
			t.Logf("recipes.py output:\n%s\nstderr:\n%s", strings.Join(r.all, "\n"), r.stderr.String())
			r.mu.Unlock()
		}
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := recipeLine{raw: sc.Text()}
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				l = recipeLine{Recipe: "(not JSON)", raw: sc.Text()}
			}
			r.mu.Lock()
			r.all = append(r.all, sc.Text())
			r.mu.Unlock()
			r.lines <- l
		}
		close(r.lines)
		r.done <- cmd.Wait()
	}()
	return r
}

// results drains the run's lines and returns the recipe results (not the events) and the exit error.
func (r *recipesRun) results() ([]recipeLine, error) {
	var res []recipeLine
	for l := range r.lines {
		if l.Event == "" {
			res = append(res, l)
		}
	}
	return res, <-r.done
}

func requireRecipesOK(t *testing.T, res []recipeLine, exit error, want ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range res {
		require.True(t, l.OK, "recipe failed: %s", l.raw)
		seen[l.Recipe] = true
	}
	for _, w := range want {
		require.True(t, seen[w], "no result for recipe %s", w)
	}
	require.NoError(t, exit, "recipes.py exited non-zero")
}

// TestZKTools_KazooRecipes runs every kazoo recipe once against each target.
func TestZKTools_KazooRecipes(t *testing.T) {
	targets := zkTargets(t)
	py := needKazoo(t)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			e := tg.start(t, 1)
			r := startRecipes(t, py, 5*time.Minute, "--hosts", strings.Join(e.addrs, ","))
			res, err := r.results()
			requireRecipesOK(t, res, err, "lock", "election", "counter", "queue", "barrier", "party")
		})
	}
}

// TestZKTools_KazooFailover runs kazoo's lock and counter for 20 s against a 3-server target and kills the leader
// with SIGKILL in the middle: the clients move to the others and keep their sessions, mutual exclusion holds, the
// counter is exact (within the increments a connection loss made ambiguous), and both go on after the kill.
func TestZKTools_KazooFailover(t *testing.T) {
	targets := zkTargets(t)
	py := needKazoo(t)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			e := tg.start(t, 3)
			r := startRecipes(t, py, 5*time.Minute, "--hosts", strings.Join(e.addrs, ","), "--loop", "20",
				"--session-timeout", "15")

			// Kill once the recipes are under way.
			var atKill recipeLine
			deadline := time.After(2 * time.Minute)
			for atKill.Event == "" {
				select {
				case l, ok := <-r.lines:
					require.True(t, ok, "recipes.py ended before making progress")
					require.NotEqual(t, "connect", l.Recipe, "recipes.py could not connect: %s", l.raw)
					if l.Event == "progress" && l.Lock >= 10 && l.Counter >= 10 {
						atKill = l
					}
				case <-deadline:
					t.Fatal("the recipes made no progress within 2 minutes")
				}
			}
			leader := e.leader(t)
			e.kill(t, leader)
			t.Logf("killed server %d (%s), the leader, at lock=%d counter=%d", leader, e.addrs[leader], atKill.Lock, atKill.Counter)

			var last recipeLine
			var res []recipeLine
			for l := range r.lines {
				if l.Event == "progress" {
					last = l
				} else if l.Event == "" {
					res = append(res, l)
					t.Log(l.raw)
				}
			}
			requireRecipesOK(t, res, <-r.done, "lock", "counter", "sessions")
			require.Greater(t, last.Lock, atKill.Lock, "no lock acquired after the kill")
			require.Greater(t, last.Counter, atKill.Counter, "no increment after the kill")
		})
	}
}

// zkCliStep is one command of zkcli_script.txt and what its output must and must not contain.
type zkCliStep struct {
	line          int
	cmd           string
	want, wantNot []string
}

func parseZkCliScript(t *testing.T, path string) []zkCliStep {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var steps []zkCliStep
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "> "):
			steps = append(steps, zkCliStep{line: i + 1, cmd: strings.TrimPrefix(l, "> ")})
		case len(steps) == 0:
			t.Fatalf("%s:%d: an expectation before the first command", path, i+1)
		case strings.HasPrefix(l, "!"):
			steps[len(steps)-1].wantNot = append(steps[len(steps)-1].wantNot, l[1:])
		default:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	require.NotEmpty(t, steps)
	return steps
}

// TestZKTools_ZkCli pipes zkcli_script.txt into one zkCli session against each target and checks every
// command's output.
func TestZKTools_ZkCli(t *testing.T) {
	targets := zkTargets(t)
	java := zktest.Need(t)
	const script = "testdata/zk/zkcli_script.txt"
	steps := parseZkCliScript(t, script)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			e := tg.start(t, 1)
			// After each command a stat of a path that does not exist: its answer marks where the command's
			// output ends (stdout and stderr share one pipe, and zkCli flushes each line).
			marker := func(i int) string { return fmt.Sprintf("/zkcli-script-marker-%d", i) }
			var in strings.Builder
			for i, s := range steps {
				fmt.Fprintf(&in, "%s\nstat %s\n", s.cmd, marker(i))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, java, "-cp", "/etc/zookeeper/conf:"+zktest.Jar,
				"org.apache.zookeeper.ZooKeeperMain", "-waitforconnection", "-server", strings.Join(e.addrs, ","))
			cmd.Stdin = strings.NewReader(in.String())
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			// zkCli exits with the status of its last command, the failing marker: the output is the verdict.
			_ = cmd.Run()
			require.NoError(t, ctx.Err(), "zkCli did not finish within 2 minutes:\n%s", out.String())

			rest := out.String()
			for i, s := range steps {
				end := "Node does not exist: " + marker(i)
				block, after, ok := strings.Cut(rest, end)
				require.True(t, ok, "%s:%d: no output after %q (zkCli stopped?); whole output:\n%s", script, s.line, s.cmd, out.String())
				rest = after
				for _, w := range s.want {
					require.Contains(t, block, w, "%s:%d: %q", script, s.line, s.cmd)
				}
				for _, w := range s.wantNot {
					require.NotContains(t, block, w, "%s:%d: %q", script, s.line, s.cmd)
				}
			}
		})
	}
}

// TestZKTools_Import copies a tree from a real ZooKeeper 3.8 into each target with the corral binary (`corral zk
// import`) and reads it back from the target. cli/zk_test.go covers the import's options between two ZooKeepers;
// this is the migration itself, run as a user runs it.
func TestZKTools_Import(t *testing.T) {
	targets := zkTargets(t)
	source := startRealZK(t, 1).addrs[0]
	src := dialZKTest(t, source)
	open := zk.WorldACL(zk.PermAll)
	for _, p := range []struct {
		path string
		data string
	}{{"/kafka", ""}, {"/kafka/brokers", ""}, {"/kafka/brokers/topics", ""}, {"/kafka/brokers/topics/orders", `{"partitions":{"0":[1,2]}}`},
		{"/kafka/config", "c"}, {"/dolphinscheduler", "ds"}, {"/dolphinscheduler/lock", ""}} {
		_, err := src.Create(p.path, []byte(p.data), 0, open)
		require.NoError(t, err)
	}
	_, err := src.Create("/kafka/controller", []byte(`{"brokerid":1}`), zk.FlagEphemeral, open)
	require.NoError(t, err)
	_, err = src.Create("/kafka/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "kafka", "pw"))
	require.NoError(t, err)

	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			target := tg.start(t, 1).addrs[0]
			// The source's ACL on /kafka/secret grants kafka alone: the importer reads it as kafka.
			out, code := runCLI(t, "zk", "import", "--from", source, "--to", target, "--from-auth", "digest:kafka:pw", "-o", "json")
			require.Zero(t, code, out)
			var r struct {
				Created          int `json:"created"`
				EphemeralSkipped int `json:"ephemeral_skipped"`
				Failed           int `json:"failed"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			require.Equal(t, 8, r.Created)
			require.Equal(t, 1, r.EphemeralSkipped)
			require.Zero(t, r.Failed)

			dst := dialZKTest(t, target)
			data, _, err := dst.Get("/kafka/brokers/topics/orders")
			require.NoError(t, err)
			require.Equal(t, `{"partitions":{"0":[1,2]}}`, string(data))
			ok, _, err := dst.Exists("/kafka/controller")
			require.NoError(t, err)
			require.False(t, ok, "an ephemeral node was copied")
			_, _, err = dst.Get("/kafka/secret")
			require.ErrorIs(t, err, zk.ErrNoAuth, "the copied ACL is enforced")
			kafka := dialZKTest(t, target)
			require.NoError(t, kafka.AddAuth("digest", []byte("kafka:pw")))
			acl, _, err := kafka.GetACL("/kafka/secret")
			require.NoError(t, err)
			require.Equal(t, zk.DigestACL(zk.PermAll, "kafka", "pw"), acl)
			data, _, err = kafka.Get("/kafka/secret")
			require.NoError(t, err)
			require.Equal(t, "s", string(data))

			// Again: nothing to do, nothing fails.
			out, code = runCLI(t, "zk", "import", "--from", source, "--to", target, "--from-auth", "digest:kafka:pw")
			require.Zero(t, code, out)
			require.Contains(t, out, "CREATED  UPDATED  SKIPPED-EXISTING  EPHEMERAL-SKIPPED  VANISHED  FAILED\n0        0        8")
		})
	}
}

// dialZKTest opens a go-zookeeper session for the test, silenced, and waits for it.
func dialZKTest(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 20*time.Second, zk.WithLogger(nopZKLogger{}), zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no ZooKeeper session with %s within 30s", addr)
		}
	}
}

type nopZKLogger struct{}

func (nopZKLogger) Printf(string, ...any) {}
