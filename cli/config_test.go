package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "corral.yaml")
	require.NoError(t, os.WriteFile(f, []byte(body), 0o600))
	return f
}

// TestConfigFilePrecedence: the file sets a value, CORRAL_* overrides the file, a flag overrides both.
func TestConfigFilePrecedence(t *testing.T) {
	urls := map[string]string{}
	for _, v := range []string{"file", "env", "flag"} {
		_, url := newFakeAPI(t)
		_, _, err := run(t, "kv", "put", "--endpoints", url, "k", v)
		require.NoError(t, err)
		urls[v] = url
	}
	cfg := writeConfig(t, "# the dev cluster\nendpoints: "+urls["file"]+"\ntimeout: 5s\n")

	out, _, err := run(t, "--config", cfg, "kv", "get", "k")
	require.NoError(t, err)
	require.Equal(t, "file\n", out)

	t.Setenv("CORRAL_CONFIG", cfg) // the file can be named by its variable too
	out, _, err = run(t, "kv", "get", "k")
	require.NoError(t, err)
	require.Equal(t, "file\n", out)

	t.Setenv("CORRAL_ENDPOINTS", urls["env"])
	out, _, err = run(t, "kv", "get", "k")
	require.NoError(t, err)
	require.Equal(t, "env\n", out)

	out, _, err = run(t, "kv", "get", "--endpoints", urls["flag"], "k")
	require.NoError(t, err)
	require.Equal(t, "flag\n", out)
}

// TestConfigFileReachesRun: typed values (durations, numbers, lists) of a node's flags land in its config, and
// keys of other commands (endpoints) are accepted so one file serves both.
func TestConfigFileReachesRun(t *testing.T) {
	cfg := writeConfig(t, "endpoints: http://127.0.0.1:1\nrequest-timeout: 7s\nhttp-addr: 127.0.0.1:9999\n")
	c, err := parseRun(t, append([]string{"--config", cfg}, validRun(map[string]string{"http-addr": ""})...))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9999", c.HTTPAddr)
	require.Equal(t, "7s", c.RequestTimeout.String())
}

func TestConfigFileErrors(t *testing.T) {
	cfg := writeConfig(t, "endpoints: http://127.0.0.1:1\nhttp-adr: 127.0.0.1:8080\n")
	_, _, err := run(t, "--config", cfg, "kv", "get", "k")
	require.ErrorContains(t, err, `--config `+cfg+`: unknown key "http-adr" (did you mean "http-addr"?)`)

	cfg = writeConfig(t, "zzzzzzzz: 1\n")
	_, _, err = run(t, "--config", cfg, "kv", "get", "k")
	require.ErrorContains(t, err, `unknown key "zzzzzzzz" (keys are flag names`)

	cfg = writeConfig(t, "- a\n- b\n")
	_, _, err = run(t, "--config", cfg, "kv", "get", "k")
	require.ErrorContains(t, err, "not a YAML mapping")

	cfg = writeConfig(t, "timeout: soon\n")
	_, _, err = run(t, "--config", cfg, "kv", "get", "k")
	require.ErrorContains(t, err, `bad value "soon" for timeout`)

	_, _, err = run(t, "--config", filepath.Join(t.TempDir(), "missing.yaml"), "kv", "get", "k")
	require.ErrorContains(t, err, "read --config")
}
