package metadata

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseJobSpec_DefaultsAndYAML(t *testing.T) {
	spec, err := ParseJobSpec([]byte(`{"name": "web", "task": {"command": "sleep", "args": ["60"],
		"resources": {"cpu_millis": 100, "memory_mb": 64}}}`))
	require.NoError(t, err)
	require.Equal(t, JobService, spec.Type)
	require.Equal(t, 1, spec.Count)
	require.Equal(t, PlaceSpread, spec.Placement)
	require.Equal(t, Duration(5*time.Second), spec.Task.KillTimeout)

	yamlSpec, err := ParseJobSpec([]byte("name: web\ntask:\n  command: sleep\n  args: [\"60\"]\n  resources: {cpu_millis: 100, memory_mb: 64}\n"))
	require.NoError(t, err)
	require.True(t, spec.Equal(yamlSpec), "YAML and JSON forms of one spec are equal")
}

func TestParseJobSpec_ErrorsNameTheField(t *testing.T) {
	cases := []struct {
		spec  string
		field string
	}{
		{`{"task": {"command": "x"}}`, "name"},
		{`{"name": "bad name!", "task": {"command": "x"}}`, "name"},
		{`{"name": "a", "type": "cron", "task": {"command": "x"}}`, "type"},
		{`{"name": "a", "count": -1, "task": {"command": "x"}}`, "count"},
		{`{"name": "a", "count": 2, "singleton": true, "task": {"command": "x"}}`, "count"},
		{`{"name": "a", "task": {}}`, "task.command"},
		{`{"name": "a", "task": {"command": "x", "resources": {"cpu_millis": -5}}}`, "task.resources.cpu_millis"},
		{`{"name": "a", "task": {"command": "x", "kill_timeout": "forever"}}`, "(spec)"},
		{`{"name": "a", "task": {"command": "x"}, "constraints": [{"label": "zone", "operator": "~"}]}`, "constraints[0].operator"},
		{`{"name": "a", "task": {"command": "x"}, "constraints": [{"label": "zone", "operator": "in"}]}`, "constraints[0].values"},
		{`{"name": "a", "task": {"command": "x"}, "placement": "random"}`, "placement"},
		{`{"name": "a", "task": {"command": "x"}, "restart": {"attempts": -1}}`, "restart.attempts"},
		{`{"name": "a", "task": {"command": "x"}, "colour": "red"}`, "(spec)"},
		{``, "(spec)"},
		{`{"name": "a", "task": {"command": "x"}} {}`, "(spec)"},
	}
	for _, tc := range cases {
		_, err := ParseJobSpec([]byte(tc.spec))
		require.ErrorIs(t, err, ErrInvalid, tc.spec)
		fields := SpecFields(err)
		require.NotEmpty(t, fields, tc.spec)
		require.Equal(t, tc.field, fields[0].Field, "%s: %v", tc.spec, err)
	}
}

func TestJobSpec_ConstraintsMatch(t *testing.T) {
	spec := &JobSpec{Constraints: []Constraint{
		{Label: "zone", Operator: "in", Values: []string{"a", "b"}},
		{Label: "gpu", Operator: "exists"},
		{Label: "tier", Operator: "!=", Value: "spot"},
		{Label: "os", Operator: "=", Value: "linux"},
	}}
	require.True(t, spec.Matches(map[string]string{"zone": "a", "gpu": "1", "os": "linux"}))
	require.False(t, spec.Matches(map[string]string{"zone": "c", "gpu": "1", "os": "linux"}))
	require.False(t, spec.Matches(map[string]string{"zone": "a", "os": "linux"}))
	require.False(t, spec.Matches(map[string]string{"zone": "a", "gpu": "1", "os": "linux", "tier": "spot"}))
	require.False(t, spec.Matches(map[string]string{"zone": "a", "gpu": "1"}))
}

func FuzzParseJobSpec(f *testing.F) {
	f.Add([]byte(`{"name": "web", "task": {"command": "sleep"}}`))
	f.Add([]byte("name: x\ntask: {command: y}\n"))
	f.Add([]byte(`{"name": "a", "constraints": [{"label": "l", "operator": "in", "values": ["x"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseJobSpec(data)
		if err == nil {
			require.NoError(t, spec.Validate(), "a parsed spec is valid")
		}
	})
}
