package bench

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

// testEnv stands in for cli's wiring: the same flag names and environment variables, plain error wrapping.
func testEnv() Env {
	envVars := func(name string) []string {
		return []string{"CORRAL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
	}
	return Env{
		EnvVars: envVars,
		ClientFlags: func() []cli.Flag {
			return []cli.Flag{
				&cli.StringFlag{Name: "endpoints", Value: "http://127.0.0.1:8080", EnvVars: envVars("endpoints")},
				&cli.StringFlag{Name: "token", EnvVars: envVars("token")},
				&cli.DurationFlag{Name: "timeout", Value: client.DefaultTimeout, EnvVars: envVars("timeout")},
			}
		},
		NewClient: func(c *cli.Context) (*client.Client, error) {
			return client.New(client.Config{Endpoints: splitList(c.String("endpoints")), Token: c.String("token"),
				Timeout: c.Duration("timeout")})
		},
		Explain: func(op string, err error) error { return fmt.Errorf("%s: %w", op, err) },
		WantArgs: func(c *cli.Context, n int) error {
			if c.NArg() != n {
				return fmt.Errorf("'%s' takes %d argument(s), got %d", c.Command.HelpName, n, c.NArg())
			}
			return nil
		},
		NewLogger: func(_ *cli.Context, w io.Writer) (*slog.Logger, error) {
			return slog.New(slog.NewTextHandler(w, nil)), nil
		},
		ParseControllers: func(s string) ([]string, error) {
			if out := splitList(s); len(out) > 0 {
				return out, nil
			}
			return nil, errors.New("missing --controllers")
		},
	}
}

// run executes `corral ARGS...` in-process, with bench as the only command and testEnv as its wiring, and
// returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	app := &cli.App{Name: "corral", Commands: []*cli.Command{{Name: "bench", Subcommands: Commands(testEnv())}},
		ExitErrHandler: func(*cli.Context, error) {}}
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.Run(append([]string{"corral"}, args...))
	return out.String(), errOut.String(), err
}

// fakeAPI is the part of the corral HTTP API that bench kv uses: the cluster status and single-key puts and gets.
type fakeAPI struct {
	mu  sync.Mutex
	rev int64
	kvs map[string]fakeKV
}

type fakeKV struct {
	value []byte
	mod   int64
}

func newFakeAPI(t *testing.T) (*fakeAPI, string) {
	t.Helper()
	f := &fakeAPI{kvs: map[string]fakeKV{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"cluster_id": "test-cluster", "leader_id": 1, "term": 3})
	})
	mux.HandleFunc("PUT /v1/kv/{key...}", func(w http.ResponseWriter, r *http.Request) {
		val, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.rev++
		f.kvs[r.PathValue("key")] = fakeKV{value: val, mod: f.rev}
		writeJSON(w, http.StatusOK, map[string]any{"revision": f.rev})
	})
	mux.HandleFunc("GET /v1/kv/{key...}", func(w http.ResponseWriter, r *http.Request) {
		key := r.PathValue("key")
		f.mu.Lock()
		defer f.mu.Unlock()
		kv, ok := f.kvs[key]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": "key " + strconv.Quote(key) + " not found",
				"code": "not_found"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"key": key, "value": base64.StdEncoding.EncodeToString(kv.value),
			"encoding": "base64", "create_revision": kv.mod, "mod_revision": kv.mod, "version": 1})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
