package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/cli"
)

// unit is a parsed unit file: section -> key -> values, in order (a key
// may repeat, and an empty assignment is kept as "").
type unit map[string]map[string][]string

func (u unit) get(section, key string) []string { return u[section][key] }

// one returns the last value of key, as systemd uses it for single-valued
// settings.
func (u unit) one(section, key string) string {
	v := u.get(section, key)
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func parseUnit(t *testing.T, file string) unit {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	var cont strings.Builder // a line continued with a trailing backslash
	for _, line := range strings.Split(string(b), "\n") {
		if cont.Len() == 0 {
			if s := strings.TrimSpace(line); s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, ";") {
				continue
			}
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cont.WriteString(s + " ")
			continue
		}
		cont.WriteString(line)
		line = strings.TrimSpace(cont.String())
		cont.Reset()
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("%s: cannot parse %q", file, line)
		}
		u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
	}
	return u
}

// runFlags returns `corral run`'s flags by name and by environment
// variable, from the CLI itself.
func runFlags(t *testing.T) (byName map[string]bool, byEnv map[string]string) {
	t.Helper()
	byName, byEnv = map[string]bool{}, map[string]string{}
	for _, c := range cli.App().Commands {
		if c.Name != "run" {
			continue
		}
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				byName[n] = true
			}
			if ev, ok := f.(interface{ GetEnvVars() []string }); ok {
				for _, e := range ev.GetEnvVars() {
					byEnv[e] = f.Names()[0]
				}
			}
		}
		return byName, byEnv
	}
	t.Fatal("corral has no run command")
	return nil, nil
}

// envFile reads an environment file's KEY=VALUE lines into KEY -> set.
// Commented-out assignments (#KEY=...) count too, as not set, since they
// document options a reader may turn on.
func envFile(t *testing.T, file string) (vars map[string]bool) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars = map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		set := !strings.HasPrefix(line, "#")
		line = strings.TrimPrefix(line, "#")
		k, _, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") || k == "" {
			continue // prose
		}
		vars[k] = vars[k] || set
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vars
}

// execFlags returns the --flag=value arguments of an ExecStart= line that
// runs `corral run`, by flag name.
func execFlags(t *testing.T, name, execStart string) map[string]string {
	t.Helper()
	argv := strings.Fields(execStart)
	if len(argv) < 2 || argv[0] != "/usr/local/bin/corral" || argv[1] != "run" {
		t.Fatalf("%s: ExecStart=%s: want /usr/local/bin/corral run ...", name, execStart)
	}
	out := map[string]string{}
	for _, a := range argv[2:] {
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("%s: ExecStart argument %q: write flags as --name=value", name, a)
			continue
		}
		out[k] = v
	}
	return out
}

func TestUnits(t *testing.T) {
	byName, byEnv := runFlags(t)
	for _, tc := range []struct {
		unit, env, role string
	}{
		{"corral-controller.service", "controller.env.example", "controller"},
		{"corral-worker.service", "worker.env.example", "worker"},
	} {
		t.Run(tc.role, func(t *testing.T) {
			u := parseUnit(t, tc.unit)
			svc := func(k string) string { return u.one("Service", k) }
			flags := execFlags(t, tc.unit, svc("ExecStart"))
			for f := range flags {
				if !byName[f] {
					t.Errorf("%s: ExecStart uses --%s, which 'corral run' does not have", tc.unit, f)
				}
			}
			if flags["role"] != tc.role {
				t.Errorf("%s: --role=%s, want %s", tc.unit, flags["role"], tc.role)
			}

			// The environment file's example names only real variables,
			// and none that ExecStart already sets (the flag would win,
			// silently).
			if got := svc("EnvironmentFile"); got != "/etc/corral/"+strings.TrimSuffix(tc.env, ".example") {
				t.Errorf("%s: EnvironmentFile=%s, want the installed %s", tc.unit, got, tc.env)
			}
			vars := envFile(t, tc.env)
			if len(vars) == 0 {
				t.Fatalf("%s: no variables", tc.env)
			}
			for v := range vars {
				flag, ok := byEnv[v]
				switch {
				case !ok:
					t.Errorf("%s: 'corral run' reads no variable %s", tc.env, v)
				case flags[flag] != "":
					t.Errorf("%s: %s is also set by --%s in %s's ExecStart, which wins", tc.env, v, flag, tc.unit)
				}
			}
			if tc.role == "worker" && vars["CORRAL_TLS_DIR"] && vars["CORRAL_JOIN_TOKEN"] {
				t.Errorf("%s: CORRAL_TLS_DIR and CORRAL_JOIN_TOKEN are both set; a worker refuses that", tc.env)
			}

			// corral does not call sd_notify: Type=notify would time out.
			if svc("Type") != "exec" {
				t.Errorf("%s: Type=%s, want exec (corral does not speak sd_notify)", tc.unit, svc("Type"))
			}
			// The data dir is the unit's state directory, and the one
			// writable path in a read-only system.
			dataDir := "/var/lib/" + svc("StateDirectory")
			if flags["data-dir"] != dataDir {
				t.Errorf("%s: --data-dir=%s, want %s (StateDirectory=%s)", tc.unit, flags["data-dir"], dataDir, svc("StateDirectory"))
			}
			if !slices.Contains(u.get("Service", "ReadWritePaths"), dataDir) {
				t.Errorf("%s: ReadWritePaths does not list %s", tc.unit, dataDir)
			}
			for k, want := range map[string]string{
				"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
				"PrivateDevices": "yes", "RestrictSUIDSGID": "yes", "SystemCallArchitectures": "native",
				"ExecReload": "/bin/kill -HUP $MAINPID", "UMask": "0077",
			} {
				if svc(k) != want {
					t.Errorf("%s: %s=%s, want %s", tc.unit, k, svc(k), want)
				}
			}
			if !slices.Contains(u.get("Service", "SystemCallFilter"), "@system-service") {
				t.Errorf("%s: no SystemCallFilter=@system-service", tc.unit)
			}
			caps := strings.Fields(svc("CapabilityBoundingSet"))
			slices.Sort(caps)
			if tc.role == "controller" {
				if len(u.get("Service", "CapabilityBoundingSet")) == 0 || len(caps) != 0 {
					t.Errorf("%s: CapabilityBoundingSet=%v, want empty: a controller needs no capability", tc.unit, caps)
				}
				if user := svc("User"); user == "" || user == "root" {
					t.Errorf("%s: User=%q: run the controller as its own user", tc.unit, user)
				}
				if svc("MemoryDenyWriteExecute") != "yes" {
					t.Errorf("%s: MemoryDenyWriteExecute=yes missing", tc.unit)
				}
			} else {
				// Root with exactly what starting tasks as another user
				// needs (the unit's comment says why each).
				want := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL", "CAP_SETGID", "CAP_SETUID"}
				if !slices.Equal(caps, want) {
					t.Errorf("%s: CapabilityBoundingSet=%v, want %v", tc.unit, caps, want)
				}
				if user := svc("User"); user != "" && user != "root" {
					t.Errorf("%s: User=%s: a worker that is not root runs tasks as itself", tc.unit, user)
				}
				if svc("KillMode") != "mixed" {
					t.Errorf("%s: KillMode=%s, want mixed: the worker stops its tasks itself", tc.unit, svc("KillMode"))
				}
			}
		})
	}
}

// TestSystemdAnalyzeVerify runs `systemd-analyze verify` on the units, with
// ExecStart pointing at an executable that exists here (this test binary:
// verify checks only that the command can be executed).
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed, so the units are not verified (TestUnits still checks them)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	units, err := filepath.Glob("*.service")
	if err != nil || len(units) == 0 {
		t.Fatalf("no units: %v", err)
	}
	args := []string{"verify"}
	for _, f := range units {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/corral", self)), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.Command(analyze, args...).CombinedOutput()
	// verify exits 0 on unknown keys and bad values (it warns and
	// ignores them, as systemd would), so any line about our units fails.
	var ours []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		if strings.Contains(line, dir) || slices.ContainsFunc(units, func(u string) bool { return strings.Contains(line, u) }) {
			ours = append(ours, line)
		} else {
			t.Logf("systemd-analyze (not about our units): %s", line)
		}
	}
	if err != nil || len(ours) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, strings.Join(ours, "\n"))
	}
}
