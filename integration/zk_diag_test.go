package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// dumpZNodeViews logs, when a test waited in vain for a znode change,
// what each controller says: its applied index, whether path exists
// there, its ZooKeeper metrics, and (where --enable-pprof is on) the
// goroutines of the ZooKeeper port and of the raft loop. A lost watch
// event and a controller that stopped applying look the same from the
// client; this tells them apart in CI's output.
func (c *zkCluster) dumpZNodeViews(t *testing.T, path string) {
	t.Helper()
	for id := uint64(1); id <= uint64(len(c.nodes)); id++ {
		n := c.nodes[id]
		if ci, err := n.info(); err == nil {
			t.Logf("node %d: leader %d, term %d, commit %d, applied %d", id, ci.LeaderID, ci.Term, ci.CommitIndex, ci.AppliedIndex)
		} else {
			t.Logf("node %d: no cluster info: %v", id, err)
		}
		t.Logf("node %d: %s exists: %s", id, path, zkExistsOn(c.zkAddr[id], path))
		zkMetric := func(line string) bool { return strings.HasPrefix(line, "corral_zk_") }
		t.Logf("node %d: metrics:\n%s", id, strings.Join(metricLines(n, zkMetric), "\n"))
	}
	// The stacks last: CI's excerpt of a long failure keeps its start.
	for id := uint64(1); id <= uint64(len(c.nodes)); id++ {
		if g := httpText(c.nodes[id].endpoint() + "/debug/pprof/goroutine?debug=1"); g != "" {
			t.Logf("node %d: goroutines in zk and replica:\n%s", id, stacksWith(g, "/roles/controller/zk", "/roles/controller/replica"))
		}
	}
}

// zkExistsOn asks one controller, through a fresh session, whether path
// exists there (after a sync), as a sentence for the log.
func zkExistsOn(addr, path string) string {
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		return "connect: " + err.Error()
	}
	defer conn.Close()
	if _, err := conn.Sync(path); err != nil {
		return "sync: " + err.Error()
	}
	ok, st, err := conn.Exists(path)
	switch {
	case err != nil:
		return "exists: " + err.Error()
	case !ok:
		return "no"
	}
	return fmt.Sprintf("yes, owner %#x, czxid %#x", st.EphemeralOwner, st.Czxid)
}

// httpText GETs url and returns its body, "" on any error.
func httpText(url string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return string(b)
}

// stacksWith keeps the goroutine groups of a debug=1 goroutine profile
// that mention any of marks.
func stacksWith(profile string, marks ...string) string {
	var out []string
	for _, g := range strings.Split(profile, "\n\n") {
		for _, m := range marks {
			if strings.Contains(g, m) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}
