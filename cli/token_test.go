package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

const goodJoinToken = "corral-join-0123456789abcdef.0000000000000000000000000000000000000000000000000000000000000000"

func TestTokenUsageErrors(t *testing.T) {
	worker := func(over map[string]string) []string {
		m := map[string]string{"role": "worker", "tls-dir": ""}
		for k, v := range over {
			m[k] = v
		}
		return validRun(m)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"token without command", []string{"token"}, "missing command after 'corral token'"},
		{"token unknown command", []string{"token", "mint"}, "unknown command 'corral token mint'"},
		{"create without role", []string{"token", "create"}, "missing --role: join tokens admit workers: --role worker"},
		{"create controller token", []string{"token", "create", "--role", "controller"}, `role "controller": join tokens admit workers only`},
		{"create short ttl", []string{"token", "create", "--role", "worker", "--ttl", "30s"}, "ttl 30s: want 1m0s to 720h0m0s"},
		{"create long ttl", []string{"token", "create", "--role", "worker", "--ttl", "800h"}, "ttl 800h0m0s"},
		{"create zero uses", []string{"token", "create", "--role", "worker", "--uses", "0"}, "uses 0: want 1 to 1000"},
		{"create many uses", []string{"token", "create", "--role", "worker", "--uses", "1001"}, "uses 1001"},
		{"create args", []string{"token", "create", "--role", "worker", "x"}, "takes no arguments"},
		{"list args", []string{"token", "list", "x"}, "takes no arguments"},
		{"revoke no id", []string{"token", "revoke"}, "takes 1 argument(s), got 0"},
		{"revoke bad id", []string{"token", "revoke", "XYZ"}, `join token id "XYZ": want 16 lower-case hex digits`},
		{"run worker token and tls dir", worker(map[string]string{"join-token": goodJoinToken, "ca-cert": "ca.pem", "tls-dir": "/x"}),
			"give --tls-dir or --join-token, not both"},
		{"run worker token without ca", worker(map[string]string{"join-token": goodJoinToken}), "--join-token needs --ca-cert"},
		{"run worker ca without token", worker(map[string]string{"ca-cert": "ca.pem"}), "--ca-cert goes with --join-token"},
		{"run worker bad token", worker(map[string]string{"join-token": "corral-join-nope", "ca-cert": "ca.pem"}), "bad --join-token: join token: want corral-join-"},
		{"run worker neither", worker(nil), "or join with --join-token and --ca-cert"},
		{"run worker with ca dir", worker(map[string]string{"join-token": goodJoinToken, "ca-cert": "ca.pem", "ca-dir": "/ca"}),
			"--ca-dir is for controllers"},
		{"run controller with join token", validRun(map[string]string{"join-token": goodJoinToken}), "--join-token and --ca-cert are for --role=worker"},
		{"run combined with ca cert", validRun(map[string]string{"role": "combined", "ca-cert": "ca.pem"}), "--join-token and --ca-cert are for --role=worker"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, tt.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

// freeClusterAddr is a UDP address nothing listens on, for a controller's
// cluster port that workers must be told in advance.
func freeClusterAddr(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := c.LocalAddr().String()
	require.NoError(t, c.Close())
	return addr
}

// A worker with a join token and the CA certificate, but no certificate of
// its own, joins a controller started with --ca-dir and becomes alive; the
// single-use token then admits no one else, and expired or revoked tokens
// are refused with what to do.
func TestWorkerJoinsWithAToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a controller and workers")
	}
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls") // the dev layout: the CA lives beside the node certificate
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1", "localhost"}))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var (
		ctrl *roles.Controller
		err  error
	)
	for attempt := range 5 { // the free port may be taken again in between
		addr := freeClusterAddr(t)
		ctrl, err = roles.StartController(roles.ControllerConfig{
			NodeID: 1, DataDir: filepath.Join(dir, "data", strconv.Itoa(attempt)), ClusterAddr: addr, HTTPAddr: "127.0.0.1:0",
			Peers: map[uint64]string{1: addr}, TLSDir: tlsDir, CADir: tlsDir, Logger: quiet,
		})
		if err == nil {
			break
		}
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctrl.Close() })
	clusterAddr := ctrl.ClusterAddrs()[0]
	ep := "--endpoints=http://" + ctrl.HTTPAddr()
	require.Eventually(t, func() bool {
		_, _, err := run(t, "token", "list", ep)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "the controller never served the API")

	out, errOut, err := run(t, "token", "create", ep, "--role", "worker", "--ttl", "10m")
	require.NoError(t, err)
	tok := strings.TrimSpace(out)
	id, _, err := metadata.ParseJoinToken(tok)
	require.NoError(t, err, "standard output is the token alone")
	require.Contains(t, errOut, "join token "+id+" admits 1 worker(s) until ")

	// The worker gets only ca.pem: no certificate, and never ca-key.pem.
	caCert := filepath.Join(dir, "ca.pem")
	b, err := os.ReadFile(filepath.Join(tlsDir, transport.CAFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(caCert, b, 0o644))
	workerCfg := func(dataDir, token string) roles.WorkerConfig {
		return roles.WorkerConfig{DataDir: dataDir, Controllers: []string{clusterAddr}, JoinToken: token, CACert: caCert,
			HeartbeatInterval: 100 * time.Millisecond, Simulate: true, Logger: quiet}
	}
	w1Dir := filepath.Join(dir, "w1")
	w1, err := roles.StartWorker(workerCfg(w1Dir, tok))
	require.NoError(t, err)
	t.Cleanup(func() { _ = w1.Close() })

	cl, err := client.New(client.Config{Endpoints: []string{"http://" + ctrl.HTTPAddr()}})
	require.NoError(t, err)
	requireAlive := func(id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			w, err := cl.Worker(context.Background(), id)
			return err == nil && w.State == "alive"
		}, 20*time.Second, 50*time.Millisecond, "worker %s never became alive", id)
	}
	requireAlive(w1.ID())

	// The token was for one worker.
	_, err = roles.StartWorker(workerCfg(filepath.Join(dir, "w2"), tok))
	require.ErrorContains(t, err, "join refused by controller "+clusterAddr+": join token used up: all 1 use(s) were spent, the last by worker "+w1.ID())
	require.ErrorContains(t, err, ": create a new one with 'corral token create --role worker'")
	_, statErr := os.Stat(filepath.Join(dir, "w2", "tls", transport.NodeFile))
	require.ErrorIs(t, statErr, os.ErrNotExist)

	out, _, err = run(t, "token", "list", ep)
	require.NoError(t, err)
	require.Regexp(t, `(?m)^ID\s+ROLE\s+USES LEFT\s+EXPIRES\s+STATE\s+LAST WORKER\n`+id+`\s+worker\s+0/1\s+\S+\s+used_up\s+`+w1.ID()+`\n$`, out)
	require.NotContains(t, out, tok[len(tok)-64:])

	// The worker restarts from its data dir; the spent token is not needed.
	require.NoError(t, w1.Close())
	w1, err = roles.StartWorker(workerCfg(w1Dir, tok))
	require.NoError(t, err)
	requireAlive(w1.ID())

	// An expired token, made in the past through raft.
	secret := make([]byte, metadata.JoinTokenSecretBytes)
	past := time.Now().Add(-2 * time.Hour).UnixMilli()
	cmd, err := metadata.NewWorkerCommand(metadata.OpJoinTokenCreate, metadata.JoinTokenCreate{
		ID: "00000000000000ee", SecretSHA256: metadata.JoinTokenSecretHash(secret), Role: "worker", Uses: 5,
		AtMS: past, ExpiresAtMS: past + time.Hour.Milliseconds()})
	require.NoError(t, err)
	_, err = ctrl.Propose(context.Background(), cmd)
	require.NoError(t, err)
	_, err = roles.StartWorker(workerCfg(filepath.Join(dir, "w3"), metadata.FormatJoinToken("00000000000000ee", secret)))
	require.ErrorContains(t, err, "join token expired at "+time.UnixMilli(past).Add(time.Hour).UTC().Format(time.RFC3339)+
		": create a new one with 'corral token create --role worker'")

	// A wrong secret is refused; a revoked token is unknown.
	out, _, err = run(t, "token", "create", ep, "--role", "worker", "--uses", "3")
	require.NoError(t, err)
	tok2 := strings.TrimSpace(out)
	id2, _, err := metadata.ParseJoinToken(tok2)
	require.NoError(t, err)
	wrong := metadata.FormatJoinToken(id2, []byte(strings.Repeat("x", metadata.JoinTokenSecretBytes)))
	_, err = roles.StartWorker(workerCfg(filepath.Join(dir, "w4"), wrong))
	require.ErrorContains(t, err, "wrong secret for join token "+id2)
	out, _, err = run(t, "token", "revoke", ep, id2)
	require.NoError(t, err)
	require.Equal(t, "revoked join token "+id2+": it admits no worker from now on\n", out)
	_, err = roles.StartWorker(workerCfg(filepath.Join(dir, "w5"), tok2))
	require.ErrorContains(t, err, "unknown join token "+id2)
	_, _, err = run(t, "token", "revoke", ep, id2)
	require.ErrorContains(t, err, "join token "+id2+" not found")

	// Every refusal is counted.
	mfs, err := ctrl.Registry().Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "corral_join_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, 1.0, got["ok"])
	require.Equal(t, 1.0, got["used_up"])
	require.Equal(t, 1.0, got["expired"])
	require.Equal(t, 1.0, got["wrong_secret"])
	require.Equal(t, 1.0, got["unknown_token"])
	require.Zero(t, got["rate_limited"])
}

// --ca-dir reaches the controller's config; --join-token and --ca-cert the
// worker's.
func TestJoinFlagsReachTheConfigs(t *testing.T) {
	var ctrl roles.ControllerConfig
	var wk roles.WorkerConfig
	app := App()
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	for _, cmd := range app.Commands {
		if cmd.Name == "run" {
			cmd.Action = func(c *cli.Context) error {
				var err error
				if c.String("role") == "worker" {
					wk, err = workerConfig(c, false)
				} else {
					ctrl, err = controllerConfig(c)
				}
				return err
			}
		}
	}
	require.NoError(t, app.Run(append([]string{"corral"}, validRun(map[string]string{"ca-dir": "/etc/corral/ca"})...)))
	require.Equal(t, "/etc/corral/ca", ctrl.CADir)
	t.Setenv("CORRAL_JOIN_TOKEN", goodJoinToken)
	t.Setenv("CORRAL_CA_CERT", "/etc/corral/ca.pem")
	require.NoError(t, app.Run(append([]string{"corral"}, validRun(map[string]string{"role": "worker", "tls-dir": ""})...)))
	require.Equal(t, goodJoinToken, wk.JoinToken)
	require.Equal(t, "/etc/corral/ca.pem", wk.CACert)
	require.Empty(t, wk.TLSDir)
}
