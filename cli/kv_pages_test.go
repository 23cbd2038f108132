package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kv ls follows the server's range pages and prints every key once.
func TestKVListFollowsPages(t *testing.T) {
	f, url := newFakeAPI(t)
	f.mu.Lock()
	f.pageSize = 2
	f.mu.Unlock()
	ep := "--endpoints=" + url
	for i := range 5 {
		_, _, err := run(t, "kv", "put", ep, fmt.Sprintf("p/%d", i), "v")
		require.NoError(t, err)
	}
	out, errOut, err := run(t, "kv", "ls", ep, "p/")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	require.Equal(t, []string{"KEY", "VALUE", "MOD", "REVISION"}, strings.Fields(lines[0]))
	for i := range 5 {
		require.Equal(t, fmt.Sprintf("p/%d", i), strings.Fields(lines[i+1])[0])
	}
	require.Contains(t, errOut, "5 key(s) at revision")
}
