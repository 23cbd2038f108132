package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
)

// cliOut runs the corral binary and returns its standard output alone (a
// secret the command prints) and its standard error; it fails the test
// unless the command exits 0.
func cliOut(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(corralBin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	require.NoError(t, cmd.Run(), "corral %s: %s%s", strings.Join(args, " "), o.String(), e.String())
	return strings.TrimSpace(o.String()), e.String()
}

// tokenClient is a Go client over eps with token tok.
func tokenClient(t *testing.T, tok string, eps ...string) *client.Client {
	t.Helper()
	cl, err := client.New(client.Config{Endpoints: eps, Token: tok, Timeout: 10 * time.Second})
	require.NoError(t, err)
	return cl
}

// requirePermission checks err is a 403 naming resource:access on name.
func requirePermission(t *testing.T, err error, resource, access, name string) {
	t.Helper()
	require.ErrorIs(t, err, client.ErrPermissionDenied)
	var ae *client.Error
	require.True(t, errors.As(err, &ae))
	require.Equal(t, 403, ae.Status)
	require.NotNil(t, ae.Permission, "%v", err)
	require.Equal(t, resource, ae.Permission.Resource)
	require.Equal(t, access, ae.Permission.Access)
	if name != "*" {
		require.NotNil(t, ae.Permission.Name, "%v", err)
		require.Equal(t, name, *ae.Permission.Name)
	}
}

// A three-controller cluster bootstrapped with 'corral acl bootstrap':
// tokens made with the CLI carry their policies' grants on every
// controller (followers forward with the caller's token), survive a
// restart, and stop working everywhere once deleted.
func TestACL_TokensScopeEveryController(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll()
	c.waitLeader(30 * time.Second)
	eps := []string{c.nodes[1].endpoint(), c.nodes[2].endpoint(), c.nodes[3].endpoint()}
	ep := "--endpoints=" + strings.Join(eps, ",")
	ctx := context.Background()

	root, msg := cliOut(t, "acl", "bootstrap", ep)
	require.True(t, strings.HasPrefix(root, "corral-acl-"), "bootstrap printed %q", root)
	require.Contains(t, msg, "shown only now")
	out, code := runCLI(t, "acl", "bootstrap", ep, "--token="+root)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "bootstrapped already")

	// Without a token nothing is served any more, on any controller.
	for _, e := range eps {
		_, err := tokenClient(t, "", e).Get(ctx, "x")
		require.ErrorIs(t, err, client.ErrUnauthorized, "%s", e)
	}

	tok := "--token=" + root
	cliOut(t, "acl", "policy", "create", ep, tok, "--rule=kv=read", "--rule=coord=read", "--rule=jobs=read",
		"--rule=workers=read", "--rule=operator=read", "--description=the dashboard", "readonly")
	cliOut(t, "acl", "policy", "create", ep, tok, "--rule=kv:app/=write", "--rule=jobs:app-=write", "app")
	ro, _ := cliOut(t, "acl", "token", "create", ep, tok, "--name=viewer", "--policy=readonly")
	app, _ := cliOut(t, "acl", "token", "create", ep, tok, "--name=app", "--policy=app")
	admin := tokenClient(t, root, eps...)
	_, err := admin.Put(ctx, "other/secret", []byte("s"))
	require.NoError(t, err)

	for _, e := range eps { // each controller, leader or follower
		roc, appc := tokenClient(t, ro, e), tokenClient(t, app, e)
		_, err := roc.Get(ctx, "other/secret")
		require.NoError(t, err, "a read-only token reads (%s)", e)
		_, err = roc.Put(ctx, "other/secret", []byte("x"))
		requirePermission(t, err, "kv", "write", "other/secret")
		_, _, err = roc.SubmitJob(ctx, []byte(`{"name":"app-web","task":{"command":"/bin/true"}}`))
		requirePermission(t, err, "jobs", "write", "*")

		_, err = appc.Put(ctx, "app/x", []byte(e))
		require.NoError(t, err, "%s", e)
		_, err = appc.Get(ctx, "other/secret")
		requirePermission(t, err, "kv", "read", "other/secret")
		_, _, err = appc.List(ctx, "other/")
		requirePermission(t, err, "kv", "read", "other/")
		_, _, err = appc.List(ctx, "")
		requirePermission(t, err, "kv", "read", "")
		kvs, _, err := appc.List(ctx, "app/")
		require.NoError(t, err)
		require.Len(t, kvs, 1)
	}
	kv, err := admin.Get(ctx, "other/secret")
	require.NoError(t, err)
	require.Equal(t, "s", string(kv.Value), "a refused write changed nothing")

	// The CLI explains a refusal and exits 1.
	out, code = runCLI(t, "kv", "put", ep, "--token="+ro, "other/secret", "y")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "kv:write")
	require.Contains(t, out, "corral acl token self")
	out, _ = cliOut(t, "acl", "token", "self", ep, "--token="+ro)
	require.Contains(t, out, "readonly")

	// Tokens and policies are replicated state: a restarted controller
	// knows them.
	c.kill(2)
	c.start(2)
	require.Eventually(t, func() bool {
		_, err := tokenClient(t, app, c.nodes[2].endpoint()).Put(ctx, "app/after-restart", []byte("1"))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the restarted controller never took the app token")

	// Deleting a token refuses it everywhere.
	list, _ := cliOut(t, "acl", "token", "list", ep, tok, "-o", "json")
	require.NotContains(t, list, app[len("corral-acl-"):], "a list shows a secret")
	toks, err := admin.ACLTokens(ctx)
	require.NoError(t, err)
	var appAcc string
	for _, tk := range toks {
		if tk.Name == "app" {
			appAcc = tk.AccessorID
		}
	}
	require.NotEmpty(t, appAcc)
	cliOut(t, "acl", "token", "delete", ep, tok, appAcc)
	for _, e := range eps {
		require.Eventually(t, func() bool {
			_, err := tokenClient(t, app, e).Get(ctx, "app/x")
			return errors.Is(err, client.ErrUnauthorized)
		}, 10*time.Second, 20*time.Millisecond, "%s still takes a deleted token", e)
	}
}

// --api-token-file stays a management token beside bootstrapped ACLs.
func TestACL_APITokenFileIsManagement(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "api-token")
	require.NoError(t, os.WriteFile(tokFile, []byte("file-secret-token\n"), 0o600))
	c := newCluster(t, 1, "--api-token-file="+tokFile)
	c.startAll()
	ep := "--endpoints=" + c.nodes[1].endpoint()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		_, err := tokenClient(t, "file-secret-token", c.nodes[1].endpoint()).Put(ctx, "a", []byte("1"))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	out, code := runCLI(t, "acl", "bootstrap", ep)
	require.Equal(t, 1, code, "bootstrap without the file's token: %s", out)
	root, _ := cliOut(t, "acl", "bootstrap", ep, "--token=file-secret-token")
	for _, tk := range []string{root, "file-secret-token"} {
		_, err := tokenClient(t, tk, c.nodes[1].endpoint()).Get(ctx, "a")
		require.NoError(t, err)
	}
}

// TestACL_DashboardReadOnlyToken: in Chromium, the dashboard with a
// read-only token shows the cluster and its jobs but disables or hides
// every action the token cannot take; with the management token the same
// actions are there.
func TestACL_DashboardReadOnlyToken(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped under -short (it needs Chromium)")
	}
	chrome := chromiumPath(t)
	c := newCluster(t, 1)
	c.startAll()
	c.waitLeader(30 * time.Second)
	ep := c.nodes[1].endpoint()
	ctx := context.Background()
	root, _ := cliOut(t, "acl", "bootstrap", "--endpoints="+ep)
	admin := tokenClient(t, root, ep)
	require.NoError(t, admin.PutACLPolicy(ctx, client.ACLPolicy{Name: "readonly", Rules: []client.ACLRule{
		{Resource: "kv", Access: "read"}, {Resource: "coord", Access: "read"}, {Resource: "jobs", Access: "read"},
		{Resource: "workers", Access: "read"}, {Resource: "operator", Access: "read"}}}))
	ro, err := admin.CreateACLToken(ctx, "viewer", "client", []string{"readonly"}, 0)
	require.NoError(t, err)
	_, _, err = admin.SubmitJob(ctx, []byte(`{"name":"ro-job","task":{"command":"/bin/true"}}`))
	require.NoError(t, err)

	b := newBrowser(t, chrome)
	defer b.checkNoExceptions()
	b.navigate(ep + "/ui/")
	b.do(chromedp.SendKeys(chromedp.CSS("#token-input"), ro.Secret), chromedp.KeyEvent(kb.Enter))
	b.waitJS("leader with the read-only token", text("#ov-leader")+` === '1' ? 'ok' : ''`, 15*time.Second)
	b.waitJS("token named in the header", text("#hdr-token")+`.includes('viewer') ? 'ok' : ''`, 10*time.Second)

	b.navigate(ep + "/ui/#/jobs")
	b.waitJS("job listed", `document.querySelector('#jobs tr[data-key="ro-job"]') ? 'ok' : ''`, 15*time.Second)
	b.waitJS("stop disabled", `document.querySelector('#jobs tr[data-key="ro-job"] [data-fid="stop"]')?.disabled ? 'ok' : ''`, 5*time.Second)
	b.waitJS("no submit form", `!document.querySelector('#job-submit') && document.querySelector('#job-submit-denied') ? 'ok' : ''`, 5*time.Second)
	b.screenshot("ui-readonly-jobs.png")
	b.navigate(ep + "/ui/#/controllers")
	b.waitJS("controller listed", `document.querySelector('#controllers tr[data-key="1"] [data-fid="remove"]') ? 'ok' : ''`, 15*time.Second)
	b.waitJS("remove disabled", `document.querySelector('#controllers tr[data-key="1"] [data-fid="remove"]').disabled ? 'ok' : ''`, 5*time.Second)

	// The management token gets the actions back.
	b.do(chromedp.SendKeys(chromedp.CSS("#token-input"), root), chromedp.KeyEvent(kb.Enter))
	b.navigate(ep + "/ui/#/jobs")
	b.waitJS("submit form", `document.querySelector('#job-submit') ? 'ok' : ''`, 15*time.Second)
	b.waitJS("stop enabled", `(() => { const s = document.querySelector('#jobs tr[data-key="ro-job"] [data-fid="stop"]'); return s && !s.disabled ? 'ok' : ''; })()`, 15*time.Second)
}
