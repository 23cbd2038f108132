package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		out, _, err := run(t, args...)
		require.NoError(t, err, args)
		require.Contains(t, out, "corral dev\n", args)
		require.Contains(t, out, "go:     "+runtime.Version(), args)
	}
	_, _, err := run(t, "version", "extra")
	require.ErrorContains(t, err, "takes no arguments")
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, _, err := run(t, "completion", shell)
		require.NoError(t, err, shell)
		require.Contains(t, out, "corral", shell)
	}
	fish, _, _ := run(t, "completion", "fish")
	require.Contains(t, fish, "complete -c corral", "fish lists the commands")
	require.Contains(t, fish, "'completion'")

	bash, _, _ := run(t, "completion", "bash")
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is needed to check the bash completion script: %v", err)
	}
	f := filepath.Join(t.TempDir(), "corral.bash")
	require.NoError(t, os.WriteFile(f, []byte(bash), 0o600))
	out, err := exec.Command("bash", "-n", f).CombinedOutput()
	require.NoError(t, err, "bash -n: %s", out)

	_, _, err = run(t, "completion", "tcsh")
	require.ErrorContains(t, err, "unknown command 'corral completion tcsh'")
}

// TestCompletionProtocol checks the answers the scripts rely on: the subcommands, and a command's flags after "-".
func TestCompletionProtocol(t *testing.T) {
	complete := func(args ...string) []string {
		// urfave/cli reads the word before --generate-bash-completion from os.Args, not from Run's arguments.
		old := os.Args
		os.Args = append([]string{"corral"}, args...)
		defer func() { os.Args = old }()
		out, _, err := run(t, args...)
		require.NoError(t, err)
		return strings.Fields(out)
	}
	require.Contains(t, complete("--generate-bash-completion"), "kv")
	require.Contains(t, complete("kv", "--generate-bash-completion"), "put")
	require.Contains(t, complete("kv", "put", "--end", "--generate-bash-completion"), "--endpoints")
}
