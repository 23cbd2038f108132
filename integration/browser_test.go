package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// startDev runs `corral dev` (a combined controller and worker on loopback,
// no token: the default local setup) and waits until it is ready. It
// returns the API's host:port.
func startDev(t *testing.T) string {
	t.Helper()
	httpAddr, clusterAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(corralBin, "dev", "--data-dir="+t.TempDir(), "--http-addr="+httpAddr, "--cluster-addr="+clusterAddr)
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Log(output.String())
		}
	})
	cl := devClient(t, httpAddr)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := cl.Put(ctx, "ready", []byte("1"))
		return err == nil
	}, 60*time.Second, 100*time.Millisecond, "corral dev did not take a write")
	return httpAddr
}

func devClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	cl, err := client.New(client.Config{Endpoints: []string{"http://" + addr}, Timeout: 10 * time.Second})
	require.NoError(t, err)
	return cl
}

// rawPost sends a POST with exactly the given Host and headers (no
// X-Corral-Client unless listed) and returns the status and body.
func rawPost(t *testing.T, addr, host, path, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(body))
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// jobNames lists the jobs the controller at addr knows.
func jobNames(t *testing.T, addr string) []string {
	t.Helper()
	var out struct {
		Jobs []struct {
			Name string `json:"name"`
		} `json:"jobs"`
	}
	require.Equal(t, http.StatusOK, apiDo(t, "GET", "http://"+addr+"/v1/jobs", "", &out))
	var names []string
	for _, j := range out.Jobs {
		names = append(names, j.Name)
	}
	return names
}

func refusedCount(t *testing.T, addr, reason string) float64 {
	return metricValue(t, &node{httpAddr: addr}, `corral_http_requests_refused_total{reason="`+reason+`"}`)
}

// shellJob is a job spec whose task creates file.
func shellJob(name, file string) string {
	return fmt.Sprintf(`{"name": %q, "task": {"command": "/bin/sh", "args": ["-c", "touch %s; sleep 600"], "kill_timeout": "1s"}}`, name, file)
}

// TestBrowserSafety_AttackRequestRefused replays the security review's
// request against a real `corral dev`: a job posted as text/plain with a
// foreign Origin and a foreign Host (DNS rebinding). It and each of its
// parts alone are refused and no job exists; the same job posted as a
// client does is accepted, so the refusals are the defences.
func TestBrowserSafety_AttackRequestRefused(t *testing.T) {
	addr := startDev(t)
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	spec := shellJob("pwn", filepath.Join(dir, "pwned"))

	code, body := rawPost(t, addr, "rebind.example:"+port, "/v1/jobs", spec,
		"Content-Type", "text/plain;charset=UTF-8", "Origin", "http://rebind.example:"+port)
	require.Equal(t, http.StatusMisdirectedRequest, code, body)
	require.Contains(t, body, `"code":"host_not_allowed"`)
	// Each defence on its own.
	code, body = rawPost(t, addr, "rebind.example:"+port, "/v1/jobs", spec, "Content-Type", "application/json", "X-Corral-Client", "x")
	require.Equal(t, http.StatusMisdirectedRequest, code, "a rebound name is refused even with a client's headers: %s", body)
	code, body = rawPost(t, addr, "", "/v1/jobs", spec, "Content-Type", "text/plain", "Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, `"code":"origin_not_allowed"`)
	code, body = rawPost(t, addr, "", "/v1/jobs", spec, "Content-Type", "text/plain")
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, `"code":"client_header_required"`)
	code, body = rawPost(t, addr, "", "/v1/jobs", spec)
	require.Equal(t, http.StatusForbidden, code, "no Content-Type at all: %s", body)

	require.Empty(t, jobNames(t, addr), "a refused request created a job")
	require.EqualValues(t, 2, refusedCount(t, addr, "host"))
	require.EqualValues(t, 1, refusedCount(t, addr, "origin"))
	require.EqualValues(t, 2, refusedCount(t, addr, "client_header"))

	// The control: the same job as the CLI sends it is accepted.
	code, body = rawPost(t, addr, "", "/v1/jobs", shellJob("control", filepath.Join(dir, "ran")), "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []string{"control"}, jobNames(t, addr))
	require.Equal(t, http.StatusOK, apiDo(t, "DELETE", "http://"+addr+"/v1/jobs/control", "", nil))
	// Probes and metrics still answer any Host.
	code, body = rawGet(t, addr, "10.1.2.3:"+port, "/healthz")
	require.Equal(t, http.StatusOK, code, body)
}

func rawGet(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	require.NoError(t, err)
	req.Host = host
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// newResolvingBrowser is a headless Chromium in which the names in hosts
// resolve to 127.0.0.1, as a DNS-rebinding attacker's domain would.
func newResolvingBrowser(t *testing.T, hosts ...string) *browser {
	t.Helper()
	var rules []string
	for _, h := range hosts {
		rules = append(rules, "MAP "+h+" 127.0.0.1")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("host-resolver-rules", strings.Join(rules, ", ")),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start Chromium")
	return &browser{t: t, ctx: ctx}
}

// TestBrowserSafety_Chromium: in a real browser, a foreign page cannot
// create a job (a no-CORS text/plain POST and a POST with the client
// header both fail), a rebinding page (a foreign name resolving to the
// API) gets 421 even for same-origin requests, and the dashboard, served
// by the API itself, still writes.
func TestBrowserSafety_Chromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped under -short (it needs Chromium)")
	}
	addr := startDev(t)
	_, port, _ := net.SplitHostPort(addr)
	api := "http://" + addr
	spec := shellJob("pwn", filepath.Join(t.TempDir(), "pwned"))

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>evil</title><p>evil</p>`)
	}))
	t.Cleanup(evil.Close)
	_, evilPort, _ := net.SplitHostPort(strings.TrimPrefix(evil.URL, "http://"))
	b := newResolvingBrowser(t, "evil.test", "rebind.test")

	// A foreign page: a simple (no preflight) text/plain POST, and one
	// with the client header, which needs a preflight the API refuses.
	b.navigate("http://evil.test:" + evilPort + "/")
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		window.results = [];
		fetch(%q, {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: %q})
			.then(() => results.push('simple: sent'), (e) => results.push('simple: ' + e));
		fetch(%q, {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Corral-Client': 'evil'}, body: %q})
			.then((r) => results.push('preflighted: ' + r.status), (e) => results.push('preflighted: failed'));
	})()`, api+"/v1/jobs", spec, api+"/v1/jobs", spec)))
	got := b.waitJS("the foreign page's requests settled", `window.results.length === 2 ? window.results.sort().join('|') : ''`, 15*time.Second)
	require.Contains(t, got, "preflighted: failed", "the browser must not get past the preflight")
	require.Greater(t, refusedCount(t, addr, "origin"), 0.0, "the foreign page's requests reached the API and were refused by Origin")

	// A rebinding page: its name resolves to the API, so its requests are
	// same-origin and may carry any header. The Host check refuses them.
	b.navigate("http://rebind.test:" + port + "/ui/")
	b.waitJS("the rebound page refused", `document.body.innerText.includes('host_not_allowed') ? 'ok' : ''`, 10*time.Second)
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		window.rebound = '';
		fetch('/v1/jobs', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Corral-Client': 'evil'}, body: %q})
			.then((r) => { window.rebound = String(r.status); }, (e) => { window.rebound = 'failed ' + e; });
	})()`, spec)))
	require.Equal(t, "421", b.waitJS("the rebound write answered", `window.rebound`, 10*time.Second))
	require.Empty(t, jobNames(t, addr), "a page created a job")

	// The dashboard, from the API's own origin, still reads and writes (a
	// raw kv PUT, which needs the client header, and a JSON POST).
	b.navigate(api + "/ui/")
	b.waitJS("the dashboard's overview", text("#ov-leader")+` === '1' ? 'ok' : ''`, 30*time.Second)
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		window.dash = '';
		import('/ui/js/api.js').then(async (m) => {
			await m.api('PUT', '/v1/kv/from/dashboard', 'hello', {contentType: 'text/plain'});
			const l = await m.post('/v1/leases', {ttl: '60s'});
			window.dash = 'ok ' + l.id;
		}).catch((e) => { window.dash = 'failed ' + (e.describe ? e.describe() : e); });
	})()`))
	dash := b.waitJS("the dashboard's writes", `window.dash`, 15*time.Second)
	require.True(t, strings.HasPrefix(dash, "ok "), dash)
	v, err := devClient(t, addr).Get(context.Background(), "from/dashboard")
	require.NoError(t, err)
	require.Equal(t, "hello", string(v.Value))
}
