package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/roles"
	"github.com/corral-dev/corral/transport"
)

// startTestController starts a one-node controller on loopback and returns its API URL once it takes writes.
func startTestController(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tlsDir := filepath.Join(dir, "tls")
	require.NoError(t, transport.CreateCerts(tlsDir, transport.RoleController, "1", []string{"127.0.0.1", "localhost"}))
	ctrl, err := roles.StartController(roles.ControllerConfig{
		NodeID: 1, DataDir: filepath.Join(dir, "data"), ClusterAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Peers: map[uint64]string{1: "127.0.0.1:0"}, TLSDir: tlsDir,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctrl.Close() })
	url := "http://" + ctrl.HTTPAddr()
	cl, err := client.New(client.Config{Endpoints: []string{url}, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := cl.Put(context.Background(), "ready", []byte("1"))
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "controller never took a write")
	return url
}

func TestServiceList(t *testing.T) {
	url := startTestController(t)
	cl, err := client.New(client.Config{Endpoints: []string{url}, Timeout: 5 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	l, err := cl.Grant(ctx, time.Minute)
	require.NoError(t, err)
	for _, in := range [][2]string{{"master", "m1"}, {"master", "m2"}, {"cache", "c1"}} {
		_, err := cl.Register(ctx, in[0], in[1], "10.0.0.1:1", map[string]string{"zone": "a"}, l.ID)
		require.NoError(t, err)
	}
	ep := "--endpoints=" + url

	out, _, err := run(t, "service", "ls", ep)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"SERVICE", "INSTANCES"}, {"cache", "1"}, {"corral-worker", "0"}, {"master", "2"}}, tableRows(out))

	out, _, err = run(t, "service", "ls", ep, "-o", "json")
	require.NoError(t, err)
	var all struct {
		Services []serviceCount `json:"services"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &all), out)
	require.Equal(t, []serviceCount{{"cache", 1}, {"corral-worker", 0}, {"master", 2}}, all.Services)

	// With NAME, -o json gives the API's shape; tables are the default.
	out, _, err = run(t, "service", "ls", ep, "-o", "json", "master")
	require.NoError(t, err)
	var one struct {
		Service   string                   `json:"service"`
		Instances []client.ServiceInstance `json:"instances"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &one), out)
	require.Len(t, one.Instances, 2)

	out, _, err = run(t, "service", "ls", ep, "master")
	require.NoError(t, err)
	rows := tableRows(out)
	require.Equal(t, []string{"INSTANCE", "ADDRESS", "LEASE", "METADATA"}, rows[0])
	require.Equal(t, []string{"m1", "10.0.0.1:1", formatInt(l.ID), "zone=a"}, rows[1])

	_, _, err = run(t, "service", "ls", ep, "a", "b")
	require.ErrorContains(t, err, "takes at most one NAME")
}

func formatInt(i int64) string { return strconv.FormatInt(i, 10) }
