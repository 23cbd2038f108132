package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A second process started with a member's --node-id (and a certificate
// for it) cannot take part: its peers reject its votes. They also say so:
// each logs a WARN naming the node and both addresses, where before the
// impostor pre-voted forever and the peers logged the rejections at INFO.
func TestDuplicateNodeIDIsNamed(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	c.waitLeader(30 * time.Second)
	dup := &node{id: 2, clusterAddr: freeAddr(t), httpAddr: freeAddr(t), dataDir: filepath.Join(c.dir, "data-dup"),
		tlsDir: c.nodes[2].tlsDir, logPath: filepath.Join(c.dir, "node-dup.log"), controllers: c.peersFlag()}
	c.nodes[99] = dup // started and killed like the others; its --node-id is 2
	c.start(99)
	require.Eventually(t, func() bool {
		for _, id := range []uint64{1, 3} {
			b, _ := os.ReadFile(c.nodes[id].logPath)
			if strings.Contains(string(b), "two processes speak as one controller") && strings.Contains(string(b), dup.clusterAddr) {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "no controller named the duplicate node 2")
	// The cluster is unharmed: the same leader (or another member) leads,
	// and writes work.
	require.NotZero(t, c.waitLeader(20*time.Second, 1, 2, 3))
	_, err := c.client(1, 3).Put(t.Context(), "after-duplicate", []byte("ok"))
	require.NoError(t, err)
}
