package integration

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// TestUIZNodes: in Chromium, the dashboard's ZooKeeper page browses the
// znode tree a real ZooKeeper client wrote through corral dev's port, and
// hides the data and children of a znode whose ACL does not let anyone
// read it.
func TestUIZNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped under -short (it needs Chromium)")
	}
	chrome := chromiumPath(t)
	d := startDevProcess(t, "--workers", "0")
	zc := zkConnect(t, []string{d.zkAddr}, 6*time.Second)
	open := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/app", "/app/config", "/app/workers"} {
		_, err := zc.Create(p, nil, 0, open)
		require.NoError(t, err)
	}
	_, err := zc.Set("/app/config", []byte("db=postgres://db:5432"), -1)
	require.NoError(t, err)
	_, err = zc.Create("/app/secret", []byte("hunter2"), 0, zk.DigestACL(zk.PermAll, "alice", "pw"))
	require.NoError(t, err)

	b := newBrowser(t, chrome)
	defer b.checkNoExceptions()
	b.navigate("http://" + d.httpAddr + "/ui/#/znodes?path=/app")
	b.waitJS("children of /app", `['config','secret','workers'].every(n => document.querySelector('#znode-children tr[data-key="' + n + '"] a')) ? 'ok' : ''`, 15*time.Second)
	b.do(chromedp.Click(chromedp.CSS(`#znode-children tr[data-key="config"] a`)))
	b.waitJS("config's data", text("#znode-data")+` === 'db=postgres://db:5432' ? 'ok' : ''`, 15*time.Second)
	b.screenshot("ui-znode-config.png")

	b.navigate("http://" + d.httpAddr + "/ui/#/znodes?path=/app/secret")
	b.waitJS("hidden data", `document.querySelector('#znode-data') === null && document.body.innerText.includes("does not let anyone read it") ? 'ok' : ''`, 15*time.Second)
	page, err := b.eval(`document.body.innerText`)
	require.NoError(t, err)
	require.NotContains(t, page, "hunter2", "the dashboard showed data the znode's ACL hides")
	require.Contains(t, page, "alice:x", "the digest id shows its user, not its hash")
}
