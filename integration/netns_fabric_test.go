package integration

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// netnsFabric is a private L2 network: a bridge in a namespace of its own
// (so the host's firewall rules for bridged traffic do not apply), one
// namespace per host attached to it, and the test's own (root) namespace
// attached too, so the test reaches every host directly. Cutting a host
// off is taking its link down inside its namespace: nobody reaches it and
// it reaches nobody, as in a real partition.
type netnsFabric struct {
	t      *testing.T
	tag    string // unique per test process
	hub    string // namespace holding the bridge
	subnet string // e.g. 10.214.37
	hosts  map[string]*fabricHost
	n      int
}

// fabricHost is one namespace on the fabric.
type fabricHost struct {
	ns string // namespace name
	nf string // its interface, inside ns
	ip string
}

// newNetnsFabric builds the hub and links the root namespace to it, or
// skips the test where namespaces cannot be made (see newNetnsLab).
func newNetnsFabric(t *testing.T) *netnsFabric {
	t.Helper()
	needNetns(t)
	pid := os.Getpid()
	f := &netnsFabric{t: t, tag: fmt.Sprintf("%d", pid%100000), subnet: fmt.Sprintf("10.214.%d", pid%200+20),
		hosts: map[string]*fabricHost{}}
	f.hub = "corral-hub-" + f.tag
	addNetns(t, f.hub)
	rootIF := "crfr" + f.tag
	t.Cleanup(func() {
		for _, h := range f.hosts {
			_ = exec.Command("ip", "netns", "del", h.ns).Run()
		}
		_ = exec.Command("ip", "link", "del", rootIF).Run()
		_ = exec.Command("ip", "netns", "del", f.hub).Run()
	})
	f.inNS(f.hub, "ip", "link", "add", "br0", "type", "bridge")
	f.inNS(f.hub, "ip", "link", "set", "br0", "up")
	f.inNS(f.hub, "ip", "link", "set", "lo", "up")
	sh(t, "ip", "link", "add", rootIF, "type", "veth", "peer", "name", rootIF+"h")
	f.plug(rootIF + "h")
	sh(t, "ip", "addr", "add", f.subnet+".1/24", "dev", rootIF)
	sh(t, "ip", "link", "set", rootIF, "up")
	return f
}

// needNetns stops a test that needs network namespaces where it cannot
// have them: it fails with what to do (a skipped test proves nothing, and
// .ci/run runs as root with iproute2), or skips under -short.
func needNetns(t *testing.T) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip("network-namespace test: skipped under -short (it needs root and iproute2)")
	case os.Geteuid() != 0:
		t.Fatal("this test creates network namespaces: run it as root (./.ci/run does), or use -short to skip it")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("this test needs the ip tool: apt-get install -y iproute2 (./.ci/run does), or use -short to skip it")
	}
}

// addNetns creates namespace ns, or fails saying why it could not.
func addNetns(t *testing.T, ns string) {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s is not permitted here (%v: %s); run as root outside a sandbox that forbids it, "+
			"or use -short to skip network-namespace tests", ns, err, out)
	}
}

// plug moves a root-namespace interface into the hub and onto the bridge.
func (f *netnsFabric) plug(ifname string) {
	sh(f.t, "ip", "link", "set", ifname, "netns", f.hub)
	f.inNS(f.hub, "ip", "link", "set", ifname, "master", "br0")
	f.inNS(f.hub, "ip", "link", "set", ifname, "up")
}

// addHost creates a namespace on the fabric and returns its address.
func (f *netnsFabric) addHost(name string) *fabricHost {
	f.t.Helper()
	f.n++
	h := &fabricHost{ns: fmt.Sprintf("corral-%s-%s", name, f.tag), nf: "eth0", ip: fmt.Sprintf("%s.%d", f.subnet, 10+f.n)}
	sh(f.t, "ip", "netns", "add", h.ns)
	f.hosts[name] = h
	pair := fmt.Sprintf("crf%d_%s", f.n, f.tag)
	sh(f.t, "ip", "link", "add", pair, "type", "veth", "peer", "name", pair+"h")
	f.plug(pair + "h")
	sh(f.t, "ip", "link", "set", pair, "netns", h.ns)
	f.inNS(h.ns, "ip", "link", "set", pair, "name", h.nf)
	f.inNS(h.ns, "ip", "addr", "add", h.ip+"/24", "dev", h.nf)
	f.inNS(h.ns, "ip", "link", "set", h.nf, "up")
	f.inNS(h.ns, "ip", "link", "set", "lo", "up")
	return h
}

// cut takes the host off the network; heal puts it back.
func (f *netnsFabric) cut(h *fabricHost)  { f.inNS(h.ns, "ip", "link", "set", h.nf, "down") }
func (f *netnsFabric) heal(h *fabricHost) { f.inNS(h.ns, "ip", "link", "set", h.nf, "up") }

// wrap is the command prefix that runs a program inside the host.
func (h *fabricHost) wrap() []string { return []string{"ip", "netns", "exec", h.ns} }

func (f *netnsFabric) inNS(ns string, args ...string) {
	f.t.Helper()
	sh(f.t, append([]string{"ip", "netns", "exec", ns}, args...)...)
}
