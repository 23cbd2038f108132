package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// TestSpecViewDecodesTheWireFormat guards the view's JSON names: a spec as the server encodes it must arrive
// whole in every field the CLI shows.
func TestSpecViewDecodesTheWireFormat(t *testing.T) {
	t.Parallel()
	no := false
	spec := metadata.JobSpec{Name: "web", Count: 1, Singleton: true, Reschedule: &no, Placement: metadata.PlaceBinpack,
		Task: metadata.Task{Command: "/bin/sh", Args: []string{"-c", "echo hi"}, Env: map[string]string{"A": "1"},
			Workdir: "/srv", Resources: metadata.Resources{CPUMillis: 250, MemoryMB: 128}},
		Constraints: []metadata.Constraint{{Label: "zone", Operator: "in", Values: []string{"a", "b"}},
			{Label: "os", Operator: "=", Value: "linux"}},
		Restart: metadata.RestartPolicy{Attempts: 3, Delay: metadata.Duration(5 * time.Second), Backoff: 1.5,
			MaxDelay: metadata.Duration(90 * time.Second)}}
	spec.Defaults()
	wire, err := json.Marshal(&spec)
	require.NoError(t, err)

	var v specView
	require.NoError(t, json.Unmarshal(wire, &v))
	require.Equal(t, "/bin/sh", v.Task.Command)
	require.Equal(t, []string{"-c", "echo hi"}, v.Task.Args)
	require.Equal(t, map[string]string{"A": "1"}, v.Task.Env)
	require.Equal(t, "/srv", v.Task.Workdir)
	require.Equal(t, int64(250), v.Task.Resources.CPUMillis)
	require.Equal(t, int64(128), v.Task.Resources.MemoryMB)
	require.Equal(t, []constraintView{{Label: "zone", Operator: "in", Values: []string{"a", "b"}},
		{Label: "os", Operator: "=", Value: "linux"}}, v.Constraints)
	require.Equal(t, metadata.PlaceBinpack, v.Placement)
	require.Equal(t, restartView{Attempts: 3, Delay: durationView(5 * time.Second), Backoff: 1.5,
		MaxDelay: durationView(90 * time.Second)}, v.Restart)
	require.NotNil(t, v.Reschedule)
	require.False(t, *v.Reschedule)
	require.True(t, v.Singleton)
}

func TestSpecViewBadDuration(t *testing.T) {
	t.Parallel()
	var v specView
	require.ErrorContains(t, json.Unmarshal([]byte(`{"restart": {"delay": "soon"}}`), &v), `bad duration "soon"`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"restart": {"delay": 5}}`), &v), "want a duration string")
}

func TestPrintSpecSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{"minimal", `{"task": {"command": "/bin/true"}}`, []string{
			"task:\t/bin/true",
			"resources:\tcpu 0m, memory 0 MB",
			"placement:\t-",
			"restart:\tnone (a failed task is not restarted in place)",
		}},
		{"everything", `{"task": {"command": "/bin/sh", "args": ["-c", "echo $HOME", ""], "workdir": "/srv",
			"env": {"B": "2", "A": "1"}, "resources": {"cpu_millis": 500, "memory_mb": 64}},
			"placement": "binpack", "singleton": true, "reschedule": false,
			"constraints": [{"label": "zone", "operator": "in", "values": ["a", "b"]}, {"label": "gpu", "operator": "exists"},
				{"label": "os", "operator": "=", "value": "linux"}],
			"restart": {"attempts": 3, "delay": "5s", "backoff": 2, "max_delay": "1m0s"}}`, []string{
			`task:` + "\t" + `/bin/sh -c "echo $HOME" ""`,
			"workdir:\t/srv",
			"env:\tA, B",
			"resources:\tcpu 500m, memory 64 MB",
			"placement:\tbinpack; constraints: zone in (a,b), gpu exists, os = linux; singleton; no rescheduling",
			"restart:\t3 attempt(s), delay 5s x2 per attempt, at most 1m0s",
		}},
		{"constant delay", `{"task": {"command": "x"}, "placement": "spread", "reschedule": true,
			"restart": {"attempts": 1, "delay": "1s", "backoff": 1, "max_delay": "1m0s"}}`, []string{
			"task:\tx",
			"resources:\tcpu 0m, memory 0 MB",
			"placement:\tspread",
			"restart:\t1 attempt(s), delay 1s",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v specView
			require.NoError(t, json.Unmarshal([]byte(tt.spec), &v))
			var out strings.Builder
			printSpecSummary(&out, &v)
			require.Equal(t, tt.want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"))
		})
	}
}
