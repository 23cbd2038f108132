package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/transport"
)

// revokedCount sums the revoked refusals over every controller.
func (c *cluster) revokedCount() float64 {
	var sum float64
	for _, n := range c.nodes {
		sum += metricLabeled(c.t, n, "corral_transport_peer_rejected_total", "reason", transport.RejectRevoked)
	}
	return sum
}

// A revoked worker is cut off at once: its open connections are closed,
// every reconnection is refused, and the leader fences it after its
// session timeout, so its work can move elsewhere. The deny-list is
// replicated, and survives a controller restart.
func TestRevoke_WorkerIsCutOffAndFenced(t *testing.T) {
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	c.waitLeader(30 * time.Second)
	w := c.newWorker("w-rev")
	w.start()
	c.waitWorker("w-rev", "alive", 30*time.Second)
	other := c.newWorker("w-ok")
	other.start()
	okW := c.waitWorker("w-ok", "alive", 30*time.Second)
	require.Zero(t, c.revokedCount())

	out, code := runCLI(t, "certs", "revoke", c.endpointsFlag(), "--reason", "test",
		"--cert", filepath.Join(c.dir, "tls-worker-w-rev", transport.NodeFile))
	require.Zero(t, code, out)

	c.waitWorker("w-rev", "fenced", itSessionTimeout+30*time.Second)
	require.Eventually(t, func() bool { return c.revokedCount() > 0 }, 20*time.Second, 100*time.Millisecond,
		"no controller refused the revoked certificate")
	// The other worker is untouched.
	got := c.waitWorker("w-ok", "alive", 5*time.Second)
	require.Equal(t, okW.Epoch, got.Epoch)

	// Every controller keeps the entry, also after a restart.
	lead := c.waitLeader(30 * time.Second)
	c.kill(lead)
	c.start(lead)
	c.waitLeader(30 * time.Second)
	out, code = runCLI(t, "certs", "revoked", "--endpoints="+c.nodes[lead].endpoint())
	require.Zero(t, code, out)
	require.Contains(t, out, "test")
	w.kill()
	before := c.revokedCount()
	w.start()
	require.Eventually(t, func() bool { return c.revokedCount() > before }, 30*time.Second, 100*time.Millisecond,
		"the restarted revoked worker was not refused")
}

// A stolen copy of a controller's certificate, once revoked by serial, can
// no longer reach the raft port, while the node that holds its current
// certificate keeps working.
func TestRevoke_StolenControllerCertificate(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	c.waitLeader(30 * time.Second)
	stolenDir := c.issue(roleController, "3", filepath.Join(c.dir, "stolen-3"))
	stolen := loadTLS(t, stolenDir)
	serial := transport.SerialHex(stolen.Cert.Leaf)

	out, code := runCLI(t, "certs", "revoke", c.endpointsFlag(), serial)
	require.Zero(t, code, out)
	// Node 1 has applied the entry once it lists it (a read served by node 1).
	require.Eventually(t, func() bool {
		out, code := runCLI(t, "certs", "revoked", "--endpoints="+c.nodes[1].endpoint())
		return code == 0 && strings.Contains(out, serial)
	}, 20*time.Second, 100*time.Millisecond)
	err := raftHandshake(t, stolen, c.nodes[1].clusterAddr)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "still open", "node 1 accepted a revoked certificate")
	require.Equal(t, 1.0, metricLabeled(t, c.nodes[1], "corral_transport_peer_rejected_total", "reason", transport.RejectRevoked))
	// Node 3, with its own certificate, is still a working member.
	cl := c.client(3)
	_, err = cl.Put(t.Context(), "after-revoke", []byte("v"))
	require.NoError(t, err)
}
