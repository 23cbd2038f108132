package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOutputJSON(t *testing.T) {
	f := newJobsAPI(t)
	for _, args := range [][]string{{"-o", "json"}, {"--output=json"}, {"--json"}} {
		out, _, err := run(t, append([]string{"job", "ls", "--endpoints", f.url}, args...)...)
		require.NoError(t, err, args)
		var answer struct {
			Jobs []map[string]any `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &answer), args)
		require.Len(t, answer.Jobs, 2, args)
	}
	out, _, err := run(t, "job", "ls", "--endpoints", f.url, "-o", "table")
	require.NoError(t, err)
	require.Equal(t, "NAME", tableRows(out)[0][0])

	_, _, err = run(t, "job", "ls", "--endpoints", f.url, "-o", "yaml")
	require.ErrorContains(t, err, `bad -o "yaml": use table or json`)

	_, url := newFakeAPI(t)
	out, _, err = run(t, "status", "--endpoints", url, "-o", "json")
	require.NoError(t, err)
	var st struct {
		ClusterID   string           `json:"cluster_id"`
		LeaderID    uint64           `json:"leader_id"`
		Controllers []map[string]any `json:"controllers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Equal(t, "test-cluster", st.ClusterID)
	require.EqualValues(t, 1, st.LeaderID)
	require.Len(t, st.Controllers, 3)
	require.Equal(t, "127.0.0.1:7001", st.Controllers[0]["address"])
}

func TestKVListJSON(t *testing.T) {
	_, url := newFakeAPI(t)
	ep := "--endpoints=" + url
	for k, v := range map[string]string{"app/a": "1", "app/b": "\xff", "other": "x"} {
		_, _, err := run(t, "kv", "put", ep, k, v)
		require.NoError(t, err)
	}
	out, _, err := run(t, "kv", "ls", ep, "-o", "json", "app/")
	require.NoError(t, err)
	var answer struct {
		KVs []struct {
			Key         string `json:"key"`
			Value       string `json:"value"`
			ValueBase64 []byte `json:"value_base64"`
			ModRevision int64  `json:"mod_revision"`
		} `json:"kvs"`
		Revision int64 `json:"revision"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &answer), out)
	require.Len(t, answer.KVs, 2)
	require.Equal(t, "app/a", answer.KVs[0].Key)
	require.Equal(t, "1", answer.KVs[0].Value)
	require.Equal(t, []byte("\xff"), answer.KVs[1].ValueBase64, "a value that is not UTF-8 goes as base64")
	require.EqualValues(t, 3, answer.Revision)

	out, _, err = run(t, "kv", "ls", ep, "-o", "json", "nothing/")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &answer), out)
	require.Empty(t, answer.KVs)
}
