package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// apiDo sends one API request and decodes a JSON answer into out (if set).
func apiDo(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Corral-Client", "integration-test") // writes need it (browser safety); raw kv values too
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(t, json.Unmarshal(b, out), "%s %s: %s", method, url, b)
	}
	return resp.StatusCode
}

// checkUIRoutes checks the HTTP side of the dashboard without a browser:
// / redirects to /ui/, the app is served, and /v1/events streams summaries.
func checkUIRoutes(t *testing.T, ep string) {
	t.Helper()
	noRedirect := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := noRedirect.Get(ep + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "GET / redirects")
	require.Equal(t, "/ui/", resp.Header.Get("Location"))

	resp, err = noRedirect.Get(ep + "/no-such-route")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "other unknown paths keep the JSON 404")

	resp, err = noRedirect.Get(ep + "/ui/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))

	resp, err = (&http.Client{Timeout: 10 * time.Second}).Get(ep + "/v1/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "event: ") {
			event = strings.TrimPrefix(line, "event: ")
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && event == "summary" {
			var s struct {
				LeaderID uint64 `json:"leader_id"`
				Peers    []struct {
					ID uint64 `json:"id"`
					Up bool   `json:"up"`
				} `json:"peers"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &s))
			require.NotZero(t, s.LeaderID, "summary names the leader")
			require.Len(t, s.Peers, 3, "summary covers every controller")
			return
		}
	}
	t.Fatalf("no summary event from /v1/events: %v", sc.Err())
}

// TestUIDashboard drives the embedded dashboard in headless Chromium
// against a real 3-controller, 2-worker cluster: the overview follows a
// leader kill, every page renders (screenshots in integration/artifacts/),
// a job submitted in the page runs and its output shows in the log viewer,
// and draining a worker from the workers page moves its allocations.
func TestUIDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped under -short (it needs Chromium and a 3-controller cluster)")
	}
	chrome := chromiumPath(t)
	c := newCluster(t, 3, workerControllerFlags()...)
	c.startAll()
	lead := c.waitLeader(20 * time.Second)
	// Worker ids are the names (their certificates name them): long enough
	// that the page checks, which look for an id in a row's text, cannot
	// find it inside an allocation id or a message.
	workers := []*workerProc{c.newWorker("ui-worker-a", "--labels=zone=a"), c.newWorker("ui-worker-b", "--labels=zone=b")}
	var ids []string
	for _, w := range workers {
		w.start()
		ids = append(ids, w.id())
	}
	for _, id := range ids {
		c.waitWorker(id, "alive", 20*time.Second)
	}
	checkUIRoutes(t, c.nodes[lead].endpoint())

	b := newBrowser(t, chrome)
	defer b.checkNoExceptions()

	// The page is opened on the leader, so killing the leader also kills
	// the page's own server: it must move to another controller.
	b.navigate(c.nodes[lead].endpoint() + "/")
	b.waitJS("leader on the overview", fmt.Sprintf(`%s === %q ? 'ok' : ''`, text("#ov-leader"), strconv.FormatUint(lead, 10)), 15*time.Second)
	b.waitJS("both workers alive", text("#ov-workers-alive")+` === '2' ? 'ok' : ''`, 15*time.Second)
	b.waitJS("every controller reporting", `document.querySelectorAll('#ov-controllers tbody .state-up').length === 3 ? 'ok' : ''`, 15*time.Second)
	// A few summaries so the charts have lines.
	b.waitJS("chart data", `(document.querySelector('#chart-writes')?.getAttribute('aria-label') || '').includes('now ') &&
		!(document.querySelector('#chart-writes')?.getAttribute('aria-label') || '').includes('now –') ? 'ok' : ''`, 15*time.Second)
	b.screenshot("ui-overview.png")

	killedAt := time.Now()
	c.kill(lead)
	newLead := b.waitJS("a new leader on the overview", fmt.Sprintf(`(() => {
		const v = %s;
		return /^[0-9]+$/.test(v) && v !== %q ? v : '';
	})()`, text("#ov-leader"), strconv.FormatUint(lead, 10)), 30*time.Second)
	t.Logf("the page showed leader %s %s after killing leader %d", newLead, time.Since(killedAt).Round(100*time.Millisecond), lead)
	host, err := b.eval(`location.host`)
	require.NoError(t, err)
	require.NotEqual(t, c.nodes[lead].httpAddr, host, "the page moved off the killed controller")
	var alive []uint64
	for id := range c.nodes {
		if id != lead {
			alive = append(alive, id)
		}
	}
	require.Equal(t, newLead, strconv.FormatUint(c.waitLeader(20*time.Second, alive...), 10), "the page shows the cluster's leader")
	b.screenshot("ui-overview-after-failover.png")
	ep := "http://" + host

	// Something for every page to show, written through the API.
	require.Equal(t, 200, apiDo(t, "PUT", ep+"/v1/kv/app/db/url", "postgres://db:5432", nil))
	require.Equal(t, 200, apiDo(t, "PUT", ep+"/v1/kv/app/cache/ttl", "30s", nil))
	var lease struct {
		ID int64 `json:"id"`
	}
	require.Equal(t, 200, apiDo(t, "POST", ep+"/v1/leases", `{"ttl": "300s"}`, &lease))
	l := strconv.FormatInt(lease.ID, 10)
	require.Equal(t, 200, apiDo(t, "POST", ep+"/v1/locks/nightly-report?id=reporter-1&lease="+l, "", nil))
	require.Equal(t, 200, apiDo(t, "POST", ep+"/v1/elections/coordinator/campaign?id=node-a&lease="+l, "", nil))
	require.Equal(t, 200, apiDo(t, "PUT", ep+"/v1/services/master/m1?lease="+l, `{"address": "10.0.0.5:5678", "metadata": {"zone": "a"}}`, nil))

	// Keyboard: a nav link is a real link that Enter follows.
	b.do(chromedp.Focus(chromedp.CSS(`a[data-nav="controllers"]`)), chromedp.KeyEvent(kb.Enter))
	b.waitJS("controllers page by keyboard", `location.hash === '#/controllers' ? 'ok' : ''`, 5*time.Second)
	b.waitJS("controllers listed", `document.querySelectorAll('#controllers tbody tr[data-key]').length === 3 ? 'ok' : ''`, 15*time.Second)
	b.waitJS("leader row", fmt.Sprintf(`(document.querySelector('#controllers tr[data-key="%s"]')?.textContent || '').includes('leader') ? 'ok' : ''`, newLead), 10*time.Second)
	b.screenshot("ui-controllers.png")

	b.navigate(ep + "/ui/#/workers")
	b.waitJS("workers listed", `document.querySelectorAll('#workers tbody tr[data-key]').length === 2 ? 'ok' : ''`, 15*time.Second)
	b.screenshot("ui-workers.png")

	b.navigate(ep + "/ui/#/workers/" + ids[0])
	b.waitJS("worker page", text("#worker-state")+` === 'alive' ? 'ok' : ''`, 15*time.Second)
	b.screenshot("ui-worker.png")

	b.navigate(ep + "/ui/#/keys?prefix=app/")
	b.waitJS("key folders", `document.querySelectorAll('#key-folders tbody tr[data-key]').length === 2 ? 'ok' : ''`, 15*time.Second)
	b.navigate(ep + "/ui/#/keys?prefix=app/db/")
	b.waitJS("key listed", `document.querySelector('#keys tr[data-key="app/db/url"]') ? 'ok' : ''`, 15*time.Second)
	b.do(chromedp.Click(chromedp.CSS(`#keys tr[data-key="app/db/url"] button`)))
	b.waitJS("key value", text("#key-value")+` === 'postgres://db:5432' ? 'ok' : ''`, 10*time.Second)
	b.waitJS("key lease", text("#key-lease")+` === 'none' ? 'ok' : ''`, 10*time.Second)
	b.screenshot("ui-keys.png")

	b.navigate(ep + "/ui/#/leases")
	b.waitJS("lease listed", fmt.Sprintf(`(document.querySelector('#leases tr[data-key="%s"]')?.textContent || '').includes('lock nightly-report') ? 'ok' : ''`, l), 15*time.Second)
	b.screenshot("ui-leases.png")

	b.navigate(ep + "/ui/#/locks")
	b.waitJS("lock listed", `(document.querySelector('#locks tr[data-key="nightly-report"]')?.textContent || '').includes('reporter-1') ? 'ok' : ''`, 15*time.Second)
	b.waitJS("election listed", `(document.querySelector('#elections tr[data-key="coordinator"]')?.textContent || '').includes('node-a') ? 'ok' : ''`, 15*time.Second)
	b.screenshot("ui-locks.png")

	b.navigate(ep + "/ui/#/services")
	b.waitJS("service listed", `document.querySelector('#services tr[data-key="master/m1"]') ? 'ok' : ''`, 15*time.Second)
	b.waitJS("workers as a service", fmt.Sprintf(`document.querySelector('#services tr[data-key="corral-worker/%s"]') ? 'ok' : ''`, ids[0]), 15*time.Second)
	b.screenshot("ui-services.png")

	withJob := jobSteps(t, b, ep)
	drainStep(t, b, ep, ids[1], withJob)

	// The overview with everything running (the README's screenshot).
	b.navigate(ep + "/ui/")
	b.waitJS("overview again", text("#ov-leader")+` !== '' ? 'ok' : ''`, 15*time.Second)
	if withJob {
		b.waitJS("running allocations on the overview", text("#ov-alloc-running")+` === '2' ? 'ok' : ''`, 15*time.Second)
	}
	// Charts with fresh lines: the page keeps older points across
	// reloads, so wait for 8 new ones in the last 10 s.
	b.waitJS("fresh chart data", `Number(document.querySelector('#chart-writes')?.dataset.recent || 0) >= 8 ? 'ok' : ''`, 30*time.Second)
	b.screenshot("ui-overview-final.png")

	// Phone width: the overview must still fit.
	b.do(chromedp.EmulateViewport(390, 844))
	b.navigate(ep + "/ui/")
	b.waitJS("overview at phone width", text("#ov-leader")+` !== '' ? 'ok' : ''`, 15*time.Second)
	overflow, err := b.eval(`String(document.documentElement.scrollWidth - document.documentElement.clientWidth)`)
	require.NoError(t, err)
	require.Equal(t, "0", overflow, "the overview scrolls sideways at 390 px")
	b.screenshot("ui-overview-phone.png")
}

// TestUIToken: with --api-token-file the dashboard's files load without a
// token, the page says it needs one, and after the user enters it in the
// token field the live overview works.
func TestUIToken(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped under -short (it needs Chromium)")
	}
	chrome := chromiumPath(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret-ui-token\n"), 0o600))
	c := newCluster(t, 1, "--api-token-file="+tokenFile)
	c.startAll()
	ep := c.nodes[1].endpoint()
	// waitLeader reads /v1/cluster, which needs the token; /readyz does not.
	require.Eventually(t, func() bool {
		resp, err := http.Get(ep + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond, "the controller never became ready")
	require.Equal(t, http.StatusUnauthorized, apiDo(t, "GET", ep+"/v1/events?once=true", "", nil), "the stream needs the token")

	b := newBrowser(t, chrome)
	defer b.checkNoExceptions()
	b.navigate(ep + "/ui/")
	b.waitJS("token banner", `(document.querySelector('#banners')?.textContent || '').includes('needs an API token') ? 'ok' : ''`, 15*time.Second)
	b.screenshot("ui-token-needed.png")
	b.do(chromedp.SendKeys(chromedp.CSS("#token-input"), "s3cret-ui-token"), chromedp.KeyEvent(kb.Enter))
	b.waitJS("leader after entering the token", text("#ov-leader")+` === '1' ? 'ok' : ''`, 15*time.Second)
	b.waitJS("banner gone", `(document.querySelector('#banners')?.textContent || '').includes('needs an API token') ? '' : 'ok'`, 10*time.Second)
	stored, err := b.eval(`sessionStorage.getItem('corral.token') || ''`)
	require.NoError(t, err)
	require.Equal(t, "s3cret-ui-token", stored, "the token is kept for this tab only")
}
