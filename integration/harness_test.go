// Package integration runs the real corral binary as separate processes on
// 127.0.0.1 and checks behaviour under crashes and restarts.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

var corralBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "corral-it-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	corralBin = filepath.Join(dir, "corral")
	build := exec.Command("go", "build", "-o", corralBin, "..")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build corral:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Ports handed out by freeAddr in this test process, never given twice.
var (
	portsMu   sync.Mutex
	portsUsed = map[int]bool{}
)

// freeAddr returns a 127.0.0.1 port free for both TCP and UDP (QUIC). It
// picks below Linux's ephemeral range (32768-60999): a port the kernel
// chose for ":0" could be handed to an outgoing connection of this test
// between the check and the node binding it (seen in CI: a controller's
// HTTP port taken, the node exiting with "address already in use").
func freeAddr(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1))
}

// freePorts returns the first of n consecutive ports that freeAddr's rules
// find free and that this process has not handed out, marking them.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	free := func(p int) bool {
		for i := range n {
			if portsUsed[p+i] || !portFree(p+i) {
				return false
			}
		}
		return true
	}
	for range 500 {
		if p := 20000 + rand.IntN(12000-n); free(p) {
			for i := range n {
				portsUsed[p+i] = true
			}
			return p
		}
	}
	t.Fatalf("no %d free ports in a row in 20000-31999", n)
	return 0
}

// node is one corral process.
type node struct {
	id          uint64
	clusterAddr string
	httpAddr    string
	dataDir     string
	tlsDir      string
	logPath     string
	extra       []string
	join        []string // API URLs to join through, instead of --controllers
	controllers string   // overrides the cluster's --controllers for this node
	wrap        []string // command prefix, e.g. ip netns exec NS
	cmd         *exec.Cmd
	exited      chan struct{}
}

// cluster is a set of controller processes sharing one CA. Every node
// holds its own certificate from that CA, naming its role and id, as in
// production: controllers in tls-<id>, workers in tls-worker-<name>.
type cluster struct {
	t     *testing.T
	dir   string
	name  string // the cluster name the CA, and so every certificate it issues, carries
	nodes map[uint64]*node
	mu    sync.Mutex
}

// Certificate roles, as `corral certs issue --role` takes them.
const (
	roleController = "controller"
	roleWorker     = "worker"
)

// newCA makes a CA for cluster name in dir (`corral certs ca`).
func newCA(t *testing.T, dir, name string) {
	t.Helper()
	out, err := exec.Command(corralBin, "certs", "ca", "--dir", dir, "--cluster", name).CombinedOutput()
	require.NoError(t, err, "certs ca: %s", out)
}

// issueCert issues a node certificate for role and id with the CA in caDir
// into out (`corral certs issue`), and returns out.
func issueCert(t *testing.T, caDir, role, id, out string) string {
	t.Helper()
	b, err := exec.Command(corralBin, "certs", "issue", "--ca-dir", caDir, "--role", role, "--id", id,
		"--hosts", "127.0.0.1,localhost", "--out", out).CombinedOutput()
	require.NoError(t, err, "certs issue --role %s --id %s: %s", role, id, b)
	return out
}

// caDir holds the cluster's CA (ca.pem, ca-key.pem); no node is given it.
func (c *cluster) caDir() string { return filepath.Join(c.dir, "ca") }

// issue issues a certificate of the cluster's CA for role and id into out.
func (c *cluster) issue(role, id, out string) string {
	c.t.Helper()
	return issueCert(c.t, c.caDir(), role, id, out)
}

// controllerTLS issues controller id's certificate into its own TLS dir.
func (c *cluster) controllerTLS(id uint64) string {
	c.t.Helper()
	return c.issue(roleController, strconv.FormatUint(id, 10), filepath.Join(c.dir, fmt.Sprintf("tls-%d", id)))
}

// newCluster prepares n controllers (not started) with extra flags each:
// one CA for the cluster, one controller certificate per node.
func newCluster(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir(), name: fmt.Sprintf("it-%08x", rand.Uint32()), nodes: map[uint64]*node{}}
	newCA(t, c.caDir(), c.name)
	for i := 1; i <= n; i++ {
		id := uint64(i)
		c.nodes[id] = &node{
			id: id, clusterAddr: freeAddr(t), httpAddr: freeAddr(t),
			dataDir: filepath.Join(c.dir, fmt.Sprintf("data-%d", i)), tlsDir: c.controllerTLS(id),
			logPath: filepath.Join(c.dir, fmt.Sprintf("node-%d.log", i)), extra: extra,
		}
	}
	t.Cleanup(c.killAll)
	return c
}

// peersFlag lists the bootstrap controllers (those not joining).
func (c *cluster) peersFlag() string {
	var parts []string
	for i := uint64(1); i <= uint64(len(c.nodes)); i++ {
		if n := c.nodes[i]; n != nil && len(n.join) == 0 {
			parts = append(parts, fmt.Sprintf("%d@%s", n.id, n.clusterAddr))
		}
	}
	return strings.Join(parts, ",")
}

func (c *cluster) startAll() {
	for i := 1; i <= len(c.nodes); i++ {
		c.start(uint64(i))
	}
}

func (c *cluster) args(n *node) []string {
	args := []string{"run", "--role=controller", fmt.Sprintf("--node-id=%d", n.id), "--data-dir=" + n.dataDir,
		"--cluster-addr=" + n.clusterAddr, "--http-addr=" + n.httpAddr, "--tls-dir=" + n.tlsDir}
	switch {
	case n.controllers != "":
		args = append(args, "--controllers="+n.controllers)
	case len(n.join) > 0:
		args = append(args, "--join="+strings.Join(n.join, ","))
	default:
		args = append(args, "--controllers="+c.peersFlag())
	}
	return append(args, n.extra...)
}

// prepareJoiner adds node id (not started), with its own controller
// certificate, that will join through the given running nodes.
func (c *cluster) prepareJoiner(id uint64, via ...uint64) *node {
	n := &node{
		id: id, clusterAddr: freeAddr(c.t), httpAddr: freeAddr(c.t),
		dataDir: filepath.Join(c.dir, fmt.Sprintf("data-%d", id)), tlsDir: c.controllerTLS(id),
		logPath: filepath.Join(c.dir, fmt.Sprintf("node-%d.log", id)),
	}
	for _, v := range via {
		n.join = append(n.join, c.nodes[v].endpoint())
	}
	c.nodes[id] = n
	return n
}

func (c *cluster) start(id uint64) {
	c.t.Helper()
	n := c.nodes[id]
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(c.t, err)
	argv := append(append(append([]string{}, n.wrap...), corralBin), c.args(n)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(c.t, cmd.Start())
	n.cmd = cmd
	n.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(n.exited)
	}()
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *cluster) kill(id uint64) {
	n := c.nodes[id]
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
	n.cmd = nil
}

func (c *cluster) killAll() {
	for id, n := range c.nodes {
		c.kill(id)
		if c.t.Failed() {
			saveArtifact(c.t, n.logPath)
			if b, err := os.ReadFile(n.logPath); err == nil {
				lines := strings.Split(string(b), "\n")
				if len(lines) > 40 {
					lines = lines[len(lines)-40:]
				}
				c.t.Logf("--- last log lines of node %d ---\n%s", id, strings.Join(lines, "\n"))
			}
		}
	}
}

func (n *node) endpoint() string { return "http://" + n.httpAddr }

// client returns a Go client over the given nodes (all when none given).
func (c *cluster) client(ids ...uint64) *client.Client {
	c.t.Helper()
	if len(ids) == 0 {
		for i := 1; i <= len(c.nodes); i++ {
			ids = append(ids, uint64(i))
		}
	}
	var eps []string
	for _, id := range ids {
		eps = append(eps, c.nodes[id].endpoint())
	}
	cl, err := client.New(client.Config{Endpoints: eps, Timeout: 10 * time.Second})
	require.NoError(c.t, err)
	return cl
}

type clusterInfo struct {
	ClusterID    string `json:"cluster_id"`
	LeaderID     uint64 `json:"leader_id"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
}

func (n *node) info() (*clusterInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", n.endpoint()+"/v1/cluster", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ci clusterInfo
	if err := json.NewDecoder(resp.Body).Decode(&ci); err != nil {
		return nil, err
	}
	return &ci, nil
}

// waitLeader waits until every listed node reports the same leader, which
// is one of them, and returns it.
func (c *cluster) waitLeader(timeout time.Duration, ids ...uint64) uint64 {
	c.t.Helper()
	if len(ids) == 0 {
		for i := 1; i <= len(c.nodes); i++ {
			ids = append(ids, uint64(i))
		}
	}
	var lead uint64
	require.Eventually(c.t, func() bool {
		lead = 0
		for _, id := range ids {
			ci, err := c.nodes[id].info()
			if err != nil || ci.LeaderID == 0 || (lead != 0 && ci.LeaderID != lead) {
				return false
			}
			lead = ci.LeaderID
		}
		for _, id := range ids {
			if id == lead {
				return true
			}
		}
		return false
	}, timeout, 20*time.Millisecond, "nodes %v never agreed on a leader", ids)
	return lead
}

// runCLI runs the corral binary and returns combined output and exit code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(corralBin, args...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

// saveArtifact copies a failed test's node log to integration/artifacts/
// (ignored by git) so it survives the test's temp dir.
func saveArtifact(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	dir := filepath.Join("artifacts", strings.ReplaceAll(t.Name(), "/", "_"))
	if os.MkdirAll(dir, 0o755) == nil {
		_ = os.WriteFile(filepath.Join(dir, filepath.Base(path)), b, 0o644)
	}
}

// waitMajorityLeader waits until a majority of the cluster's nodes, the
// leader among them, report the same leader. Unlike waitLeader it tolerates
// one node that has not caught up with the new term yet.
func (c *cluster) waitMajorityLeader(timeout time.Duration) uint64 {
	c.t.Helper()
	var lead uint64
	require.Eventually(c.t, func() bool {
		votes := map[uint64]int{}
		for _, n := range c.nodes {
			if ci, err := n.info(); err == nil && ci.LeaderID != 0 {
				votes[ci.LeaderID]++
			}
		}
		for l, v := range votes {
			if v > len(c.nodes)/2 {
				if ci, err := c.nodes[l].info(); err == nil && ci.LeaderID == l {
					lead = l
					return true
				}
			}
		}
		return false
	}, timeout, 20*time.Millisecond, "no majority agreed on a leader")
	return lead
}
