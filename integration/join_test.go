package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// joinWorker prepares a worker that has no certificate, only a join token
// and the cluster's ca.pem (never ca-key.pem).
func (c *cluster) joinWorker(name, token string) *workerProc {
	c.t.Helper()
	caCert := filepath.Join(c.dir, "ca-cert-only.pem")
	b, err := os.ReadFile(filepath.Join(c.caDir(), transport.CAFile))
	require.NoError(c.t, err)
	require.NoError(c.t, os.WriteFile(caCert, b, 0o644))
	w := &workerProc{
		t: c.t, name: name, dataDir: filepath.Join(c.dir, "worker-"+name), httpAddr: freeAddr(c.t),
		logPath: filepath.Join(c.dir, "worker-"+name+".log"),
	}
	w.args = []string{"run", "--role=worker", "--data-dir=" + w.dataDir, "--controllers=" + c.clusterAddrs(),
		"--join-token=" + token, "--ca-cert=" + caCert, "--node-id=" + name, "--http-addr=" + w.httpAddr,
		"--heartbeat-interval=" + itHeartbeat.String(), "--log-format=json"}
	c.t.Cleanup(func() {
		w.kill()
		if c.t.Failed() {
			w.dumpLog()
		}
	})
	return w
}

// The whole join flow across real processes: the controllers hold the CA
// key, a worker holds only a single-use token and ca.pem, trades the token
// for a certificate naming it, and runs; it restarts on the kept
// certificate; a second worker with the same token is refused and says why.
func TestJoin_WorkerJoinsWithATokenAndTheTokenIsSpent(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	for _, n := range c.nodes {
		n.extra = append(n.extra, "--ca-dir="+c.caDir())
	}
	c.startAll()
	c.waitLeader(30 * time.Second)

	cmd := exec.Command(corralBin, "token", "create", "--role=worker", "--uses=1", "--ttl=10m", c.endpointsFlag())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	token := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(token, "corral-join-"), token)
	require.Contains(t, stderr.String(), "it is shown only now")

	w := c.joinWorker("w-join", token)
	w.start()
	got := c.waitWorker("w-join", "alive", 60*time.Second)
	require.Equal(t, uint64(1), got.Epoch)
	tls, err := transport.LoadTLSDir(filepath.Join(w.dataDir, "tls"))
	require.NoError(t, err, "the joined worker keeps its certificate in its data dir")
	require.Equal(t, "corral://"+c.name+"/worker/w-join", tls.Self.String())
	_, err = os.Stat(filepath.Join(w.dataDir, "tls", transport.CAKeyFile))
	require.ErrorIs(t, err, os.ErrNotExist, "the CA key reached a worker")

	// A restart uses the kept certificate; the spent token is not needed.
	w.kill()
	w.start()
	c.waitWorkerEpoch("w-join", "alive", 2, 60*time.Second)

	// The token admitted one worker: a second is refused, and says so.
	second := c.joinWorker("w-second", token)
	second.start()
	select {
	case <-second.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("a worker with a spent join token kept running")
	}
	log, err := os.ReadFile(second.logPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "used up")
	require.Contains(t, string(log), "corral token create")
	_, err = os.Stat(filepath.Join(second.dataDir, "tls", transport.NodeFile))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused worker got a certificate")

	out2, code := runCLI(t, "token", "list", c.endpointsFlag())
	require.Zero(t, code, out2)
	require.Contains(t, out2, "0/1")
}
