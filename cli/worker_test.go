package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles"
)

// TestWorkerConfig checks the flag-to-config mapping of `corral run --role=worker` without starting a worker.
func TestWorkerConfig(t *testing.T) {
	var got roles.WorkerConfig
	app := App()
	app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
	for _, cmd := range app.Commands {
		if cmd.Name == "run" {
			cmd.Action = func(c *cli.Context) error {
				var err error
				got, err = workerConfig(c, false)
				return err
			}
		}
	}
	t.Setenv("CORRAL_HEARTBEAT_INTERVAL", "250ms")
	args := append([]string{"corral"}, validRun(map[string]string{
		"role": "worker", "node-id": "gpu-1", "labels": "zone=a,gpu=yes", "cpu": "1500", "memory": "2048",
		"http-addr": "127.0.0.1:9100", "controllers": "1@127.0.0.1:7001,127.0.0.1:7002",
	})...)
	require.NoError(t, app.Run(args))
	require.Equal(t, "gpu-1", got.ID)
	require.Equal(t, "/tmp/corral-n2", got.DataDir)
	require.Equal(t, []string{"127.0.0.1:7001", "127.0.0.1:7002"}, got.Controllers)
	require.Equal(t, map[string]string{"zone": "a", "gpu": "yes"}, got.Labels)
	require.EqualValues(t, 1500, got.CPUMillis)
	require.EqualValues(t, 2048, got.MemoryMB)
	require.Equal(t, "127.0.0.1:9100", got.HTTPAddr)
	require.Equal(t, "/tmp/corral-n2/tls", got.TLSDir)
	require.Equal(t, 250*time.Millisecond, got.HeartbeatInterval)
	require.Equal(t, metadata.DefaultMaxAllocs, got.MaxAllocs, "--max-allocs defaults to 100")
	require.NotNil(t, got.Logger)
}

func TestWorkerList(t *testing.T) {
	var gotState string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/workers", func(w http.ResponseWriter, r *http.Request) {
		gotState = r.URL.Query().Get("state")
		writeJSON(w, 200, map[string]any{"source": "leader", "leader_id": 1, "controller_epoch": 4, "workers": []map[string]any{
			{"id": "w-1", "epoch": 3, "state": "alive", "addresses": []string{"10.0.0.5:9100"},
				"labels": map[string]string{"zone": "a", "gpu": "yes"}, "capacity": map[string]any{"cpu_millicores": 4000, "memory_mb": 8192},
				"load": map[string]any{"cpu_millicores": 1200, "memory_mb": 900, "running_tasks": 2}, "last_heartbeat_age_ms": 420},
			{"id": "w-2", "epoch": 1, "state": "fenced", "addresses": []string{}, "labels": map[string]string{},
				"capacity": map[string]any{"cpu_millicores": 2000, "memory_mb": 1024}, "load": nil, "last_heartbeat_age_ms": nil},
		}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	out, _, err := run(t, "worker", "list", "--endpoints", srv.URL, "--state", "alive")
	require.NoError(t, err)
	require.Equal(t, "alive", gotState)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Equal(t, []string{"ID", "STATE", "EPOCH", "LAST", "HEARTBEAT", "CPU", "(m)", "MEMORY", "(MB)", "TASKS", "LABELS", "ADDRESSES"},
		strings.Fields(lines[0]))
	require.Equal(t, []string{"w-1", "alive", "3", "420ms", "ago", "1200/4000", "900/8192", "2", "gpu=yes,zone=a", "10.0.0.5:9100"},
		strings.Fields(lines[1]))
	require.Equal(t, []string{"w-2", "fenced", "1", "-", "-/2000", "-/1024", "-", "-", "-"}, strings.Fields(lines[2]))

	_, _, err = run(t, "worker")
	require.ErrorContains(t, err, "missing command after 'corral worker'")
	_, _, err = run(t, "worker", "list", "--endpoints", srv.URL, "extra")
	require.ErrorContains(t, err, "takes no arguments")
}
