package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBashCompletion loads `corral completion bash` into bash and completes with the real binary, as a shell
// does on Tab.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "bash is needed to run the bash completion script")
	complete := func(words ...string) []string {
		script := `source <("$BIN" completion bash)
COMP_WORDS=("$BIN" ` + strings.Join(words, " ") + `)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_corral_complete
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append(cmd.Environ(), "BIN="+corralBin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Fields(string(out))
	}
	require.Equal(t, []string{"kv"}, complete("k"))
	require.Contains(t, complete("job", `""`), "status")
	require.Equal(t, []string{"--endpoints"}, complete("kv", "put", "--end"))
}

// TestZshCompletion loads `corral completion zsh` into zsh (after compinit) and runs its completion function
// with the real binary; _describe, which needs a live completion widget, is stubbed to print its candidates.
func TestZshCompletion(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	require.NoError(t, err, "zsh is needed to run the zsh completion script: apt-get install zsh (./.ci/run does)")
	complete := func(words ...string) []string {
		script := `autoload -U compinit && compinit -u
source <("$BIN" completion zsh)
_describe() { print -l -- "${opts[@]}" }
_files() { print FILES }
words=("$BIN" ` + strings.Join(words, " ") + `)
_corral`
		cmd := exec.Command(zsh, "-c", script)
		cmd.Env = append(cmd.Environ(), "BIN="+corralBin)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Fields(string(out))
	}
	require.Contains(t, complete("k"), "kv")
	require.Contains(t, complete("kv", "put", "--end"), "--endpoints")
}

// TestFishCompletion loads `corral completion fish` into fish and asks it what it completes.
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	require.NoError(t, err, "fish is needed to run the fish completion script: apt-get install fish (./.ci/run does)")
	cmd := exec.Command(fish, "-c", `source ("$BIN" completion fish | psub); complete -C "corral k"; echo ---; complete -C "corral kv put --end"`)
	cmd.Env = append(cmd.Environ(), "BIN="+corralBin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	first, second, ok := strings.Cut(string(out), "---")
	require.True(t, ok, "%s", out)
	require.Contains(t, first, "kv\t")
	require.Contains(t, second, "--endpoints")
}
