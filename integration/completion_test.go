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
