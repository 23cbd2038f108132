package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
)

// configFlag is the global --config. Its keys are flag names; a flag given on the command line or through its
// CORRAL_* variable wins over the file.
func configFlag() cli.Flag {
	return &cli.StringFlag{Name: "config", EnvVars: envVars("config"), TakesFile: true,
		Usage: "YAML `FILE` of flag values, keys named like the flags (http-addr: 127.0.0.1:8080); CORRAL_* variables and flags override it"}
}

// useConfigFile makes every command of app read --config: app.Before loads and checks the file once, then each
// command's Before sets the flags it has and the user left unset. urfave/cli's altsrc would do the setting, but
// it silently ignores keys no flag reads, and a misspelt key in a config file must be an error, not a default.
func useConfigFile(app *cli.App) {
	var values map[string]string
	known := map[string]bool{}
	var walk func(cmds []*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			for _, f := range cmd.Flags {
				for _, n := range f.Names() {
					known[n] = true
				}
			}
			before := cmd.Before
			cmd.Before = func(c *cli.Context) error {
				if err := applyConfig(c, values); err != nil {
					return err
				}
				if before != nil {
					return before(c)
				}
				return nil
			}
			walk(cmd.Subcommands)
		}
	}
	walk(app.Commands)
	delete(known, "config") // the file cannot name another file
	if app.Metadata == nil {
		app.Metadata = map[string]any{}
	}
	app.Metadata[configSetKey] = map[string]bool{}
	app.Before = func(c *cli.Context) error {
		file := c.String("config")
		if file == "" {
			return nil
		}
		var err error
		values, err = loadConfig(file, known)
		return err
	}
}

// loadConfig reads a YAML mapping of flag names to scalar values (a list for a list flag) and refuses any key
// that is not a flag of some command, suggesting the nearest one. Keys of other commands than the one run are
// accepted, so one file can serve `corral run` and the client commands.
func loadConfig(file string, known map[string]bool) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read --config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("--config %s: not a YAML mapping of flag names to values: %w", file, err)
	}
	out := make(map[string]string, len(doc))
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			hint := "keys are flag names without the dashes; see 'corral <command> --help'"
			if s := nearest(k, known); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			return nil, fmt.Errorf("--config %s: unknown key %q (%s)", file, k, hint)
		}
		v, err := configValue(doc[k])
		if err != nil {
			return nil, fmt.Errorf("--config %s: key %q: %w", file, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// configValue turns a YAML value into what the flag would take on the command line.
func configValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, err := configValue(e)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	case nil:
		return "", errors.New("has no value; remove it or give one")
	default:
		return "", fmt.Errorf("must be a string, number, boolean or list, not %T", v)
	}
}

// applyConfig sets the flags of c's command that values names and neither the command line nor the environment set.
func applyConfig(c *cli.Context, values map[string]string) error {
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		v, ok := values[name]
		if !ok || c.IsSet(name) {
			continue
		}
		if err := c.Set(name, v); err != nil {
			return fmt.Errorf("--config %s: bad value %q for %s: %w", c.String("config"), v, name, err)
		}
		configSet(c.App)[name] = true
	}
	return nil
}

// configSetKey is the App.Metadata entry that lists the flags the config file set (hint.go tells them from
// flags given on the command line, which look the same to urfave/cli).
const configSetKey = "corral.config-set"

func configSet(app *cli.App) map[string]bool {
	m, _ := app.Metadata[configSetKey].(map[string]bool)
	if m == nil {
		return map[string]bool{} // an App not built by App(), e.g. in a test
	}
	return m
}

// nearest returns the known name closest to s by edit distance, or "" when none is close.
func nearest(s string, known map[string]bool) string {
	best, bestD := "", 3 // more than 2 edits away is a different word, not a typo
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names) // ties go to the same name every run
	for _, k := range names {
		if d := editDistance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
