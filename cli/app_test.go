package cli

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

// run executes the App in-process like main does and returns stdout, stderr and the error main would turn into
// exit code 1.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	app := App()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.Run(append([]string{"corral"}, args...))
	return out.String(), errOut.String(), err
}

func TestFlagsHaveEnvVars(t *testing.T) {
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			for _, f := range cmd.Flags {
				name := f.Names()[0]
				ev, ok := f.(interface{ GetEnvVars() []string })
				require.True(t, ok, "%s --%s", path+cmd.Name, name)
				require.Equal(t, envVars(name), ev.GetEnvVars(), "%s --%s", path+cmd.Name, name)
			}
			walk(path+cmd.Name+" ", cmd.Subcommands)
		}
	}
	walk("corral ", App().Commands)
	require.Equal(t, []string{"CORRAL_DATA_DIR"}, envVars("data-dir"))
}

// validRun is a complete, valid `corral run` command line; tests drop or override flags from it.
func validRun(overrides map[string]string) []string {
	flags := map[string]string{
		"role": "controller", "node-id": "2", "data-dir": "/tmp/corral-n2", "http-addr": "127.0.0.1:8082",
		"controllers": "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003", "tls-dir": "/tmp/corral-n2/tls",
	}
	for k, v := range overrides {
		if v == "" {
			delete(flags, k)
		} else {
			flags[k] = v
		}
	}
	args := []string{"run"}
	for k, v := range flags {
		args = append(args, "--"+k+"="+v)
	}
	return args
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"kv without command", []string{"kv"}, "missing command after 'corral kv'"},
		{"kv unknown command", []string{"kv", "frob"}, "unknown command 'corral kv frob'"},
		{"put one arg", []string{"kv", "put", "k"}, "takes 2 argument(s), got 1"},
		{"put flag after args", []string{"kv", "put", "k", "v", "--prev-revision", "3"}, "takes 2 argument(s), got 4"},
		{"get no arg", []string{"kv", "get"}, "usage: corral kv get [flags] KEY"},
		{"get two args", []string{"kv", "get", "a", "b"}, "takes 1 argument(s), got 2"},
		{"del no arg", []string{"kv", "del"}, "takes 1 argument(s)"},
		{"ls two args", []string{"kv", "ls", "a", "b"}, "at most one PREFIX"},
		{"negative prev", []string{"kv", "put", "--prev-revision", "-1", "k", "v"}, "--prev-revision must be >= 0"},
		{"non-numeric prev", []string{"kv", "put", "--prev-revision", "abc", "k", "v"}, "invalid value"},
		{"bad endpoint", []string{"kv", "get", "--endpoints", "ftp://x", "k"}, "bad --endpoints"},
		{"empty endpoints", []string{"kv", "get", "--endpoints", " , ", "k"}, "--endpoints is empty"},
		{"zero timeout", []string{"kv", "get", "--timeout", "0s", "k"}, "--timeout must be positive"},
		{"status args", []string{"status", "x"}, "takes no arguments"},
		{"certs without command", []string{"certs"}, "missing command"},
		{"certs no dir", []string{"certs", "create"}, "missing --dir"},
		{"certs no hosts", []string{"certs", "create", "--dir", "x", "--id", "1", "--hosts", ","}, "--hosts is empty"},
		{"certs create no id", []string{"certs", "create", "--dir", "x"}, "missing --id"},
		{"certs revoke nothing", []string{"certs", "revoke"}, "say what to revoke"},
		{"certs revoke both", []string{"certs", "revoke", "--worker", "w1", "1f"}, "say what to revoke"},
		{"certs revoke bad serial", []string{"certs", "revoke", "xyz"}, `serial "xyz": want a certificate's serial number in hex`},
		{"certs revoke bad cert", []string{"certs", "revoke", "--cert", "/dev/null"}, "holds no PEM certificate"},
		{"certs revoke serial and cert", []string{"certs", "revoke", "--cert", "x.pem", "1f"}, "not both"},
		{"certs revoke flags after serial", []string{"certs", "revoke", "1f", "--worker", "w1"}, "flags go before SERIAL"},
		{"certs revoked args", []string{"certs", "revoked", "x"}, "takes no arguments"},
		{"certs create bad role", []string{"certs", "create", "--dir", "x", "--role", "admin", "--id", "1"}, `--role "admin": want controller or worker`},
		{"certs ca no dir", []string{"certs", "ca"}, "missing --dir"},
		{"certs ca bad cluster", []string{"certs", "ca", "--dir", "x", "--cluster", "Prod!"}, `cluster name "Prod!"`},
		{"certs issue no ca", []string{"certs", "issue", "--out", "x", "--id", "1"}, "missing --ca-dir"},
		{"certs issue no out", []string{"certs", "issue", "--ca-dir", "x", "--id", "1"}, "missing --out"},
		{"certs issue no role", []string{"certs", "issue", "--ca-dir", "x", "--out", "y", "--id", "1"}, `--role "": want controller or worker`},
		{"bench without command", []string{"bench"}, "missing command"},
		{"bench clients", []string{"bench", "kv", "--clients", "0"}, "--clients must be between 1 and 10000"},
		{"bench duration", []string{"bench", "kv", "--duration", "0s"}, "--duration must be positive"},
		{"bench value size", []string{"bench", "kv", "--value-size", "-1"}, "--value-size must be between"},
		{"bench keys", []string{"bench", "kv", "--keys", "0"}, "--keys must be at least 1"},
		{"bench ops", []string{"bench", "kv", "--ops", "put,scan"}, `unknown op "scan"`},
		{"bench empty ops", []string{"bench", "kv", "--ops", ","}, "--ops is empty"},
		{"bench args", []string{"bench", "kv", "extra"}, "takes no arguments"},
		{"run worker bad labels", validRun(map[string]string{"role": "worker", "labels": "zone"}), "bad --labels"},
		{"run worker bad id", validRun(map[string]string{"role": "worker", "node-id": "bad id!"}), "bad --node-id"},
		{"run worker no controllers", validRun(map[string]string{"role": "worker", "controllers": ""}), "missing --controllers"},
		{"run worker bad controllers", validRun(map[string]string{"role": "worker", "controllers": "nohost"}), "bad --controllers entry"},
		{"run worker no tls", validRun(map[string]string{"role": "worker", "tls-dir": ""}), "missing --tls-dir"},
		{"run worker no data dir", validRun(map[string]string{"role": "worker", "data-dir": ""}), "missing --data-dir"},
		{"run worker zero heartbeat", validRun(map[string]string{"role": "worker", "heartbeat-interval": "0s"}), "--heartbeat-interval must be positive"},
		{"run worker negative cpu", validRun(map[string]string{"role": "worker", "cpu": "-1"}), "must not be negative"},
		{"run combined zero session timeout", validRun(map[string]string{"role": "combined", "session-timeout": "0s"}), "--session-timeout must be positive"},
		{"run combined bad labels", validRun(map[string]string{"role": "combined", "labels": "=x"}), "bad --labels"},
		{"run unknown role", validRun(map[string]string{"role": "boss"}), `unknown --role "boss"`},
		{"run no role", validRun(map[string]string{"role": ""}), "missing --role"},
		{"run no node id", validRun(map[string]string{"node-id": ""}), "missing --node-id"},
		{"run bad node id", validRun(map[string]string{"node-id": "x"}), "invalid value"},
		{"run no data dir", validRun(map[string]string{"data-dir": ""}), "missing --data-dir"},
		{"run no http addr", validRun(map[string]string{"http-addr": ""}), "missing --http-addr"},
		{"run no controllers", validRun(map[string]string{"controllers": ""}), "missing --controllers"},
		{"run bad controllers", validRun(map[string]string{"controllers": "1-127.0.0.1:7001"}), "bad --controllers"},
		{"run self not listed", validRun(map[string]string{"node-id": "9"}), "does not list --node-id 9"},
		{"run no tls dir", validRun(map[string]string{"tls-dir": ""}), "missing --tls-dir"},
		{"run bad log level", validRun(map[string]string{"log-level": "loud"}), "bad --log-level"},
		{"run bad log format", validRun(map[string]string{"log-format": "xml"}), "bad --log-format"},
		{"run zero snapshots", validRun(map[string]string{"snapshot-every": "0"}), "--snapshot-every must be positive"},
		{"run negative gc headroom", validRun(map[string]string{"gc-headroom-bytes": "-1"}), "--gc-headroom-bytes must be 0 (off) or a positive number of bytes"},
		{"run zero tick", validRun(map[string]string{"tick-interval": "0s"}), "--tick-interval must be positive"},
		{"run zero request timeout", validRun(map[string]string{"request-timeout": "0s"}), "--request-timeout must be positive"},
		{"run bad metrics addr", validRun(map[string]string{"metrics-addr": "9090"}), `bad --metrics-addr "9090"`},
		{"run metrics addr is http addr", validRun(map[string]string{"metrics-addr": "127.0.0.1:8082"}), "--metrics-addr 127.0.0.1:8082 is also --http-addr"},
		{"run empty metrics token file", validRun(map[string]string{"metrics-token-file": os.DevNull}), "--metrics-token-file: metrics token file " + os.DevNull + " is empty"},
		{"run unreadable metrics token file", validRun(map[string]string{"metrics-token-file": "/nonexistent/corral-metrics-token"}), "--metrics-token-file: read metrics token file"},
		{"combined empty metrics token file", validRun(map[string]string{"role": "combined", "metrics-token-file": os.DevNull}), "metrics token file " + os.DevNull + " is empty"},
		{"run extra args", append(validRun(nil), "extra"), "takes no arguments"},
		{"dev extra args", []string{"dev", "extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, tt.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestRoleFromEnv(t *testing.T) {
	t.Setenv("CORRAL_ROLE", "worker")
	_, _, err := run(t, validRun(map[string]string{"role": "", "labels": "nokey"})...)
	require.ErrorContains(t, err, "bad --labels") // only the worker role reads --labels
}

func TestNoArgsShowsHelp(t *testing.T) {
	out, _, err := run(t)
	require.NoError(t, err)
	require.Contains(t, out, "kv")
	require.Contains(t, out, "bench")
}

// TestControllerConfig checks the flag-to-config mapping of `corral run` without starting a controller.
func TestControllerConfig(t *testing.T) {
	var got roles.ControllerConfig
	app := App()
	app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
	for _, cmd := range app.Commands {
		if cmd.Name == "run" {
			cmd.Action = func(c *cli.Context) error {
				var err error
				got, err = controllerConfig(c)
				return err
			}
		}
	}
	t.Setenv("CORRAL_SNAPSHOT_EVERY", "500")
	t.Setenv("CORRAL_QUOTA_BYTES", "1048576")
	args := append([]string{"corral"}, validRun(map[string]string{
		"cluster-id": "abc", "api-token-file": "/etc/token", "tick-interval": "50ms", "cluster-addr": "0.0.0.0:7002",
	})...)
	require.NoError(t, app.Run(append(args, "--http-insecure")))
	require.EqualValues(t, 2, got.NodeID)
	require.Equal(t, "/tmp/corral-n2", got.DataDir)
	require.Equal(t, "0.0.0.0:7002", got.ClusterAddr)
	require.Equal(t, "127.0.0.1:8082", got.HTTPAddr)
	require.Equal(t, map[uint64]string{1: "127.0.0.1:7001", 2: "127.0.0.1:7002", 3: "127.0.0.1:7003"}, got.Peers)
	require.Equal(t, "/tmp/corral-n2/tls", got.TLSDir)
	require.Equal(t, "abc", got.ClusterID)
	require.Equal(t, "/etc/token", got.APITokenFile)
	require.True(t, got.HTTPInsecure)
	require.EqualValues(t, 500, got.SnapshotEvery)
	require.EqualValues(t, 1<<20, got.QuotaBytes, "--quota-bytes from its env var")
	require.Equal(t, 100000, got.MaxLeases, "--max-leases default")
	require.Equal(t, 50*time.Millisecond, got.TickInterval)
	require.Equal(t, 5*time.Second, got.RequestTimeout)
	require.NotNil(t, got.Logger)
}

func TestKVCommands(t *testing.T) {
	_, url := newFakeAPI(t)
	ep := "--endpoints=" + url

	out, _, err := run(t, "kv", "put", ep, "config/db", "db1")
	require.NoError(t, err)
	require.Equal(t, "1\n", out)

	out, _, err = run(t, "kv", "get", ep, "config/db")
	require.NoError(t, err)
	require.Equal(t, "db1\n", out)

	out, _, err = run(t, "kv", "put", ep, "--prev-revision", "1", "config/db", "db2")
	require.NoError(t, err)
	require.Equal(t, "2\n", out)

	_, _, err = run(t, "kv", "put", ep, "--prev-revision", "1", "config/db", "db3")
	require.ErrorContains(t, err, "compare failed: its mod revision is 2, not 1")

	_, _, err = run(t, "kv", "put", ep, "config/bin", "tab\there")
	require.NoError(t, err)

	out, errOut, err := run(t, "kv", "ls", ep, "config/")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, []string{"KEY", "VALUE", "MOD", "REVISION"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"config/bin", `"tab\there"`, "3"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"config/db", "db2", "2"}, strings.Fields(lines[2]))
	require.Contains(t, errOut, "2 key(s) at revision 3")

	out, _, err = run(t, "kv", "del", ep, "config/db")
	require.NoError(t, err)
	require.Equal(t, "1\n", out)

	_, _, err = run(t, "kv", "get", ep, "--serializable", "config/db")
	require.ErrorContains(t, err, `key "config/db" not found`)

	t.Setenv("CORRAL_ENDPOINTS", url)
	out, _, err = run(t, "kv", "get", "config/bin")
	require.NoError(t, err)
	require.Equal(t, "tab\there\n", out)
}

func TestKVUnreachableEndpointHint(t *testing.T) {
	_, _, err := run(t, "kv", "get", "--endpoints", "http://127.0.0.1:1", "k")
	require.ErrorContains(t, err, "is a controller running there?")
}

func TestStatusCommand(t *testing.T) {
	_, url := newFakeAPI(t)
	out, _, err := run(t, "status", "--endpoints", url)
	require.NoError(t, err)
	require.Contains(t, out, "cluster id:     test-cluster")
	require.Contains(t, out, "leader:         1")
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 6 {
			rows[f[0]] = f
		}
	}
	require.Equal(t, []string{"1", "127.0.0.1:7001", "leader", "120", "0", "yes"}, rows["1"])
	require.Equal(t, []string{"2", "127.0.0.1:7002", "follower", "118", "2", "yes"}, rows["2"])
	require.Equal(t, []string{"3", "127.0.0.1:7003", "follower", "0", "120", "no"}, rows["3"])
}

func TestStatusFromFollower(t *testing.T) {
	f, url := newFakeAPI(t)
	f.cluster["controllers"] = []map[string]any{
		{"id": 1, "address": "a:1", "role": "leader", "match_index": 0, "reachable": true},
		{"id": 2, "address": "a:2", "role": "follower", "match_index": 119, "reachable": true},
	}
	out, _, err := run(t, "status", "--endpoints", url)
	require.NoError(t, err)
	require.Contains(t, out, "answered by a follower")
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 6 {
			rows[f[0]] = f
		}
	}
	require.Equal(t, []string{"1", "a:1", "leader", "-", "-", "yes"}, rows["1"])
	// The answering follower knows its own match; its lag is measured against the commit index.
	require.Equal(t, []string{"2", "a:2", "follower", "119", "1", "yes"}, rows["2"])
}

func TestCertsCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	out, _, err := run(t, "certs", "create", "--dir", dir, "--id", "1", "--hosts", "127.0.0.1,localhost")
	require.NoError(t, err)
	require.Contains(t, out, dir)
	for _, f := range []string{"ca.pem", "ca-key.pem", "node.pem", "node-key.pem"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	b, err := transport.LoadTLSDir(dir)
	require.NoError(t, err)
	require.Equal(t, uint64(1), b.Self.NodeID())
}

// The production flow: the CA is made once, each node gets only its own
// certificate and the CA certificate, never the CA key.
func TestCertsCAAndIssue(t *testing.T) {
	root := t.TempDir()
	ca := filepath.Join(root, "ca")
	out, _, err := run(t, "certs", "ca", "--dir", ca, "--cluster", "prod")
	require.NoError(t, err)
	require.Contains(t, out, "keep ca-key.pem off workers")
	_, _, err = run(t, "certs", "ca", "--dir", ca, "--cluster", "prod")
	require.ErrorContains(t, err, "already exists: a CA is made once per cluster")

	for _, tc := range []struct{ role, id, want string }{
		{"controller", "2", "corral://prod/controller/2"},
		{"worker", "w-1", "corral://prod/worker/w-1"},
	} {
		dir := filepath.Join(root, tc.role+"-"+tc.id)
		out, _, err := run(t, "certs", "issue", "--ca-dir", ca, "--role", tc.role, "--id", tc.id, "--out", dir)
		require.NoError(t, err)
		require.Contains(t, out, tc.want)
		_, err = os.Stat(filepath.Join(dir, "ca-key.pem"))
		require.ErrorIs(t, err, os.ErrNotExist, "the CA key was copied to a node")
		b, err := transport.LoadTLSDir(dir)
		require.NoError(t, err)
		require.Equal(t, tc.want, b.Self.String())
	}
	for _, bad := range [][]string{
		{"--role", "controller", "--id", "0"},
		{"--role", "controller", "--id", "02"},
		{"--role", "worker", "--id", "bad id"},
	} {
		dir := filepath.Join(root, "bad")
		_, _, err := run(t, append([]string{"certs", "issue", "--ca-dir", ca, "--out", dir}, bad...)...)
		require.Error(t, err, bad)
		_, statErr := os.Stat(dir)
		require.ErrorIs(t, statErr, os.ErrNotExist, "a refused issue wrote files")
	}
}

// parseRun parses a `corral run` command line into the ControllerConfig it gives, without starting anything.
func parseRun(t *testing.T, args []string) (roles.ControllerConfig, error) {
	t.Helper()
	var got roles.ControllerConfig
	var parseErr error
	app := App()
	app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
	for _, cmd := range app.Commands {
		if cmd.Name == "run" {
			cmd.Action = func(c *cli.Context) error {
				got, parseErr = controllerConfig(c)
				return nil
			}
		}
	}
	require.NoError(t, app.Run(append([]string{"corral"}, args...)))
	return got, parseErr
}

// TestControllerConfigMetrics checks that --metrics-addr and --metrics-token-file (or their environment variables)
// reach the controller's config, and that neither is set by default (/metrics stays open on the API port).
func TestControllerConfigMetrics(t *testing.T) {
	got, err := parseRun(t, validRun(nil))
	require.NoError(t, err)
	require.Empty(t, got.MetricsAddr)
	require.Empty(t, got.MetricsTokenFile)

	got, err = parseRun(t, validRun(map[string]string{"metrics-addr": "0.0.0.0:9090", "metrics-token-file": "/etc/corral/metrics-token"}))
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:9090", got.MetricsAddr)
	require.Equal(t, "/etc/corral/metrics-token", got.MetricsTokenFile)
	require.Equal(t, "127.0.0.1:8082", got.HTTPAddr, "the API address is unchanged")

	t.Setenv("CORRAL_METRICS_ADDR", "127.0.0.1:9091")
	t.Setenv("CORRAL_METRICS_TOKEN_FILE", "/run/secrets/metrics")
	got, err = parseRun(t, validRun(map[string]string{"role": "combined"}))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9091", got.MetricsAddr)
	require.Equal(t, "/run/secrets/metrics", got.MetricsTokenFile)
}

// syncBuffer is a bytes.Buffer a controller's goroutines may log to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestMetricsListenerOfController starts a real controller from `corral run` flags with --metrics-addr and
// --metrics-token-file and scrapes it as Prometheus would.
func TestMetricsListenerOfController(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a controller")
	}
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1", "localhost"}))
	tokenFile := filepath.Join(dir, "metrics-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("scrape-secret\n"), 0o600))
	cfg, err := parseRun(t, []string{"run", "--role=controller", "--node-id=1", "--data-dir=" + filepath.Join(dir, "data"),
		"--http-addr=127.0.0.1:0", "--controllers=1@127.0.0.1:0", "--tls-dir=" + tlsDir,
		"--metrics-addr=127.0.0.1:0", "--metrics-token-file=" + tokenFile})
	require.NoError(t, err)
	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctrl, err := roles.StartController(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctrl.Close() })

	metricsAddr := ctrl.MetricsAddr()
	require.NotEmpty(t, metricsAddr)
	require.NotEqual(t, ctrl.HTTPAddr(), metricsAddr)
	require.Contains(t, logs.String(), "metrics_addr="+metricsAddr, "the 'controller started' line names the metrics listener")

	scrape := func(url, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := scrape("http://"+metricsAddr+"/metrics", "")
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Contains(t, body, `"code":"unauthorized"`)
	require.Contains(t, body, "credentials_file")
	code, body = scrape("http://"+metricsAddr+"/metrics", "wrong")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = scrape("http://"+metricsAddr+"/metrics", "scrape-secret")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "\ncorral_")
	code, body = scrape("http://"+ctrl.HTTPAddr()+"/metrics", "scrape-secret")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body, `"code":"metrics_moved"`)
	require.Contains(t, body, "http://"+metricsAddr+"/metrics")
	code, body = scrape("http://"+metricsAddr+"/healthz", "")
	require.Equal(t, http.StatusOK, code, body)

	require.NoError(t, ctrl.Close())
	_, err = net.DialTimeout("tcp", metricsAddr, time.Second)
	require.Error(t, err, "the metrics listener outlived the controller")
}

// TestKVGetFromAWorker: a worker's HTTP port answers 404 "not_found" to every API route; kv get must show that
// answer and say where to point --endpoints, not report a missing key.
func TestKVGetFromAWorker(t *testing.T) {
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body roles/worker/http.go answers for any route it does not serve.
		writeJSON(w, http.StatusNotFound, map[string]string{"code": "not_found",
			"error": "no route for " + r.Method + " " + r.URL.Path + " on a worker: it serves /healthz, /readyz and /metrics"})
	}))
	t.Cleanup(worker.Close)
	_, _, err := run(t, "kv", "get", "--endpoints", worker.URL, "greeting")
	require.ErrorContains(t, err, "no route for GET /v1/kv/greeting on a worker")
	require.ErrorContains(t, err, "point --endpoints at a controller's --http-addr")
	require.NotContains(t, err.Error(), "key \"greeting\" not found")

	_, url := newFakeAPI(t)
	_, _, err = run(t, "kv", "get", "--endpoints", url, "greeting")
	require.EqualError(t, err, "key \"greeting\" not found (list keys with 'corral kv ls --endpoints "+url+" PREFIX')")
}
