package jobspec

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/corral-dev/corral/metadata"
)

// webJSON and webYAML are one spec in its two forms.
const (
	webJSON = `{"name": "web", "task": {"command": "sleep", "args": ["60"],
		"resources": {"cpu_millis": 100, "memory_mb": 64}}}`
	webYAML = "name: web\ntask:\n  command: sleep\n  args: [\"60\"]\n  resources: {cpu_millis: 100, memory_mb: 64}\n"
)

func TestParse_DefaultsAndYAML(t *testing.T) {
	t.Parallel()
	spec, err := Parse([]byte(webJSON))
	require.NoError(t, err)
	require.Equal(t, metadata.JobService, spec.Type)
	require.Equal(t, 1, spec.Count)
	require.Equal(t, metadata.PlaceSpread, spec.Placement)
	require.Equal(t, metadata.Duration(5*time.Second), spec.Task.KillTimeout)

	yamlSpec, err := Parse([]byte(webYAML))
	require.NoError(t, err)
	require.True(t, spec.Equal(yamlSpec), "YAML and JSON forms of one spec are equal")
}

func TestParse_TaskUser(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"nobody", "www-data", "svc.app_1", "65534"} {
		spec, err := Parse([]byte("name: a\ntask: {command: x, user: \"" + u + "\"}\n"))
		require.NoError(t, err, u)
		require.Equal(t, u, spec.Task.User)
	}
	spec, err := Parse([]byte(webJSON))
	require.NoError(t, err)
	require.Empty(t, spec.Task.User, "no user: the worker's task user")
}

// invalidSpecs are specs Parse rejects, each with the field its first problem names.
var invalidSpecs = []struct {
	name  string
	spec  string
	field string
}{
	{"no name", `{"task": {"command": "x"}}`, "name"},
	{"bad name", `{"name": "bad name!", "task": {"command": "x"}}`, "name"},
	{"unknown type", `{"name": "a", "type": "cron", "task": {"command": "x"}}`, "type"},
	{"negative count", `{"name": "a", "count": -1, "task": {"command": "x"}}`, "count"},
	{"singleton count", `{"name": "a", "count": 2, "singleton": true, "task": {"command": "x"}}`, "count"},
	{"no command", `{"name": "a", "task": {}}`, "task.command"},
	{"negative cpu", `{"name": "a", "task": {"command": "x", "resources": {"cpu_millis": -5}}}`, "task.resources.cpu_millis"},
	{"bad duration", `{"name": "a", "task": {"command": "x", "kill_timeout": "forever"}}`, "(spec)"},
	{"unknown operator", `{"name": "a", "task": {"command": "x"}, "constraints": [{"label": "zone", "operator": "~"}]}`,
		"constraints[0].operator"},
	{"in without values", `{"name": "a", "task": {"command": "x"}, "constraints": [{"label": "zone", "operator": "in"}]}`,
		"constraints[0].values"},
	{"unknown placement", `{"name": "a", "task": {"command": "x"}, "placement": "random"}`, "placement"},
	{"negative attempts", `{"name": "a", "task": {"command": "x"}, "restart": {"attempts": -1}}`, "restart.attempts"},
	{"unknown field", `{"name": "a", "task": {"command": "x"}, "colour": "red"}`, "colour"},
	{"bad user", `{"name": "a", "task": {"command": "x", "user": "root;id"}}`, "task.user"},
	{"user starting with -", `{"name": "a", "task": {"command": "x", "user": "-u"}}`, "task.user"},
	{"user too long", `{"name": "a", "task": {"command": "x", "user": "` + strings.Repeat("u", 33) + `"}}`, "task.user"},
	{"empty", ``, "(spec)"},
	{"trailing data", `{"name": "a", "task": {"command": "x"}} {}`, "(spec)"},
	{"not YAML", "name: [web\n", "(spec)"},
	{"YAML without a JSON form", "name: a\ntask: {command: x}\n1: one\n", "1"},
	{"YAML unknown field", "name: a\ntask: {command: x}\ncolour: red\n", "colour"},
	{"YAML bad field", "name: a\ntask: {command: x}\ncount: 0\nsingleton: true\nplacement: random\n", "placement"},
	{"too large", `{"name": "a", "task": {"command": "x"}}` + strings.Repeat(" ", metadata.MaxSpecBytes), "(spec)"},
}

func TestParse_ErrorsNameTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range invalidSpecs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.spec))
			require.ErrorIs(t, err, metadata.ErrInvalid, tc.spec)
			fields := metadata.SpecFields(err)
			require.NotEmpty(t, fields, tc.spec)
			require.Equal(t, tc.field, fields[0].Field, "%s: %v", tc.spec, err)
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"name": "web", "task": {"command": "sleep"}}`))
	f.Add([]byte("name: x\ntask: {command: y}\n"))
	f.Add([]byte(`{"name": "a", "constraints": [{"label": "l", "operator": "in", "values": ["x"]}]}`))
	f.Add([]byte(webJSON))
	f.Add([]byte(webYAML))
	for _, tc := range invalidSpecs {
		f.Add([]byte(tc.spec))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := Parse(data)
		if err == nil {
			require.NoError(t, spec.Validate(), "a parsed spec is valid")
			return
		}
		require.ErrorIs(t, err, metadata.ErrInvalid, "every parse error is a spec error")
		require.NotEmpty(t, metadata.SpecFields(err), "every parse error names a field")
	})
}

// Every unknown field is reported at once, by path, with its line and the
// nearest known name; YAML errors do not speak of JSON.
func TestParse_EveryUnknownFieldAtOnce(t *testing.T) {
	t.Parallel()
	yamlSpec := "name: web\ncount: 2\ntask:\n  comand: /bin/sleep\n  resources:\n    cpu_milis: 100\nconstraints:\n  - attribute: zone\nrestrt: {attempts: 2}\n"
	_, err := Parse([]byte(yamlSpec))
	require.Error(t, err)
	fields := metadata.SpecFields(err)
	got := map[string]string{}
	for _, f := range fields {
		got[f.Field] = f.Problem
	}
	require.Len(t, got, 4, "%v", err)
	require.Contains(t, got["task.comand"], "line 4")
	require.Contains(t, got["task.comand"], `did you mean "command"?`)
	require.Contains(t, got["task.resources.cpu_milis"], "line 6")
	require.Contains(t, got["task.resources.cpu_milis"], `"cpu_millis"`)
	require.Contains(t, got["constraints[0].attribute"], "line 8")
	require.Contains(t, got["restrt"], `did you mean "restart"?`)

	_, err = Parse([]byte("name: web\ncount: lots\ntask: {command: x}\n"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "YAML")
	require.NotContains(t, err.Error(), "json")
}

// A document that names one big node many times (YAML aliases) is
// checked within a bounded walk, not once per alias.
func TestParse_AliasesDoNotMultiplyTheWalk(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("name: a\ntask: {command: x}\nx: &c {attribute: zone, operator: in, values: [")
	for i := 0; i < 2000; i++ {
		b.WriteString("v,")
	}
	b.WriteString("v]}\nconstraints: [")
	for i := 0; i < 2000; i++ {
		b.WriteString("*c,")
	}
	b.WriteString("*c]\n")
	_, err := Parse([]byte(b.String()))
	require.Error(t, err) // x is unknown; the point is that it returns
}
