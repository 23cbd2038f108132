package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium; CORRAL_CHROMIUM overrides it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CORRAL_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(p); err != nil {
		// Not a skip: .ci/run installs Chromium, so a missing browser is a
		// broken machine, not an optional feature.
		t.Fatalf("the dashboard browser test needs Chromium at %s (%v): install it with `apt-get install -y chromium` "+
			"(./.ci/run does this), set CORRAL_CHROMIUM to another Chromium binary, or run with -short to skip browser tests", p, err)
	}
	return p
}

// browser is one headless Chromium tab driven over the DevTools protocol.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu         sync.Mutex
	exceptions []string
}

func newBrowser(t *testing.T, execPath string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser now so a broken install fails here, clearly.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium at %s: %v", execPath, err)
	}
	// Uncaught exceptions fail the test; other console output is logged
	// (refused connections to a killed controller are expected).
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() {
				b.mu.Lock()
				b.exceptions = append(b.exceptions, fmt.Sprintf("%s (%s:%d)", m.Text, m.URL, m.Line))
				b.mu.Unlock()
			}
			t.Logf("browser %s", m)
		}
	}()
	return b
}

// checkNoExceptions fails the test if the page threw an uncaught error.
func (b *browser) checkNoExceptions() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.exceptions) > 0 {
		b.t.Errorf("the dashboard threw %d uncaught exception(s):\n%s", len(b.exceptions), strings.Join(b.exceptions, "\n"))
	}
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.screenshot("ui-failed.png")
		b.t.Fatalf("browser: %v", err)
	}
}

func (b *browser) navigate(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url))
}

// eval runs a JavaScript expression that yields a string.
func (b *browser) eval(expr string) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[string](expr))
}

// waitJS polls expr (a string-valued JavaScript expression, "" while not
// ready) until it is non-empty; on timeout it saves a screenshot and fails.
func (b *browser) waitJS(what, expr string, timeout time.Duration) string {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	var lastErr error
	for time.Now().Before(deadline) {
		v, err := b.eval(expr)
		if err == nil && v != "" {
			return v
		}
		last, lastErr = v, err
		time.Sleep(100 * time.Millisecond)
	}
	b.screenshot("ui-failed-" + strings.ReplaceAll(what, " ", "-") + ".png")
	text, _ := b.eval(`document.body.innerText.slice(0, 3000)`)
	b.t.Fatalf("%s: not seen within %s (last %q, err %v); page text:\n%s", what, timeout, last, lastErr, text)
	return ""
}

// text is the trimmed text of the first element matching a CSS selector
// (JavaScript expression).
func text(sel string) string {
	return fmt.Sprintf(`(document.querySelector(%q)?.textContent || '').trim()`, sel)
}

// screenshot saves the whole page as integration/artifacts/<test>/name.
func (b *browser) screenshot(name string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG, the whole page
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			b.t.Logf("screenshot %s: %v", name, err)
		}
		return ""
	}
	dir := filepath.Join("artifacts", strings.ReplaceAll(b.t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	return p
}
