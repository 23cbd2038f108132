package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// netnsLab is a network namespace joined to the host by a veth pair: the
// host side has hostIP, the namespace side nsIP (a /30 of their own).
type netnsLab struct {
	t      *testing.T
	ns     string
	hostIF string
	nsIF   string
	hostIP string
	nsIP   string
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
}

// newNetnsLab creates the namespace and the link (see needNetns for a
// machine that cannot).
func newNetnsLab(t *testing.T) *netnsLab {
	t.Helper()
	needNetns(t)
	n := os.Getpid()%200 + 20
	lab := &netnsLab{t: t, ns: fmt.Sprintf("corral-it-%d", os.Getpid()),
		hostIF: fmt.Sprintf("crlh%d", os.Getpid()%100000), nsIF: fmt.Sprintf("crln%d", os.Getpid()%100000),
		hostIP: fmt.Sprintf("10.213.%d.1", n), nsIP: fmt.Sprintf("10.213.%d.2", n)}
	addNetns(t, lab.ns)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", lab.hostIF).Run()
		_ = exec.Command("ip", "netns", "del", lab.ns).Run()
	})
	sh(t, "ip", "link", "add", lab.hostIF, "type", "veth", "peer", "name", lab.nsIF)
	sh(t, "ip", "link", "set", lab.nsIF, "netns", lab.ns)
	sh(t, "ip", "addr", "add", lab.hostIP+"/30", "dev", lab.hostIF)
	sh(t, "ip", "link", "set", lab.hostIF, "up")
	lab.inNS("ip", "addr", "add", lab.nsIP+"/30", "dev", lab.nsIF)
	lab.inNS("ip", "link", "set", lab.nsIF, "up")
	lab.inNS("ip", "link", "set", "lo", "up")
	return lab
}

func (l *netnsLab) inNS(args ...string) {
	l.t.Helper()
	sh(l.t, append([]string{"ip", "netns", "exec", l.ns}, args...)...)
}

// hostAddr returns a free UDP+TCP port on the host side of the link.
func (l *netnsLab) hostAddr() string {
	l.t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", l.hostIP+":0")
		require.NoError(l.t, err)
		addr := ln.Addr().String()
		u, err := net.ListenPacket("udp", addr)
		ln.Close()
		if err == nil {
			u.Close()
			return addr
		}
	}
	l.t.Fatal("no free port on the veth address")
	return ""
}

// A worker in its own network namespace, reaching the controllers over a
// veth link, is cut off by taking the link down: it must fence itself
// before the leader fences it, then come back with a new epoch when the
// link returns. The same as the in-memory partition test, over a real
// kernel network path with real QUIC.
func TestWorkers_NetworkNamespacePartitionWorkerFencesItselfFirst(t *testing.T) {
	lab := newNetnsLab(t)
	c := newCluster(t, 3, workerControllerFlags()...)
	for _, n := range c.nodes {
		n.clusterAddr = lab.hostAddr() // controllers listen on the veth's host side only
	}
	c.startAll()
	c.waitLeader(30 * time.Second)

	w := c.newWorker("netns")
	w.httpAddr = lab.nsIP + ":19100"
	for i, a := range w.args {
		if strings.HasPrefix(a, "--http-addr=") {
			w.args[i] = "--http-addr=" + w.httpAddr
		}
	}
	w.wrap = []string{"ip", "netns", "exec", lab.ns}
	w.start()
	id := w.id()
	c.waitWorker(id, "alive", 30*time.Second)
	require.Eventually(t, w.ready, 10*time.Second, 20*time.Millisecond, "worker HTTP not reachable over the veth")

	cut := time.Now()
	lab.inNS("ip", "link", "set", lab.nsIF, "down")
	fenced := c.waitWorker(id, "fenced", itSessionTimeout+20*time.Second)
	controllerAt := parseAPITime(t, fenced.StateChangedAt)
	var self []map[string]any
	require.Eventually(t, func() bool {
		self = logEntries(t, w.logPath, "worker fenced: stopping work")
		return len(self) > 0
	}, 10*time.Second, 20*time.Millisecond, "the cut-off worker never fenced itself")
	selfAt := parseAPITime(t, self[0]["time"].(string))
	t.Logf("link down at %s: worker fenced itself after %s, the leader fenced it after %s",
		cut.Format(time.StampMilli), selfAt.Sub(cut), controllerAt.Sub(cut))
	require.Equal(t, false, self[0]["by_controller"])
	require.True(t, selfAt.Before(controllerAt), "the leader fenced the worker (%s) before it fenced itself (%s)",
		controllerAt, selfAt)
	require.Less(t, selfAt.Sub(cut), itSessionTimeout)
	require.Equal(t, uint64(1), fenced.Epoch)

	// The link comes back: the worker registers again with a new epoch.
	lab.inNS("ip", "link", "set", lab.nsIF, "up")
	c.waitWorkerEpoch(id, "alive", 2, 30*time.Second)
	require.Eventually(t, w.ready, 10*time.Second, 20*time.Millisecond)
}
