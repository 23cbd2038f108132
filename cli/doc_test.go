package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPackageDocListsEveryCommand keeps the package doc's list of commands in step with App: every command, hidden
// ones included, has a bullet that names it and each of its subcommands.
func TestPackageDocListsEveryCommand(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	bullets := map[string]string{} // command name -> what its bullet says before the colon
	for _, b := range strings.Split(string(src), "//   - corral ")[1:] {
		head, _, ok := strings.Cut(b, ":")
		require.True(t, ok, "bullet %q has no colon", b)
		name, _, _ := strings.Cut(head, " ")
		bullets[name] = head
	}
	for _, cmd := range App().Commands {
		head, ok := bullets[cmd.Name]
		require.True(t, ok, "the package doc does not list 'corral %s'", cmd.Name)
		listed := strings.Fields(strings.ReplaceAll(head, ",", " "))[1:]
		var subs []string
		for _, sub := range cmd.Subcommands {
			subs = append(subs, sub.Name)
		}
		require.ElementsMatch(t, subs, listed, "subcommands of 'corral %s' in the package doc", cmd.Name)
	}
	require.Len(t, bullets, len(App().Commands), "the package doc lists a command App does not have")
}
