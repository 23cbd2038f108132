// Command checkimports enforces corral's package boundaries (the package
// map in docs/ARCHITECTURE.md): which of the module's packages, and which
// outside packages, each package may import. `make lint` runs it; a
// violation fails the build with the rule it breaks.
//
// It reads `go list -json ./...` and checks every package's imports,
// including its tests' (a test that reaches across a boundary couples the
// trees just the same).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
)

const module = "github.com/corral-dev/corral"

// rule forbids packages matching pkg (a path relative to the module, with
// "/..." meaning the package and everything under it) from importing
// anything matching one of deny (module-relative, or a full outside path
// when it contains a dot in its first element).
type rule struct {
	pkg  string
	deny []string
	why  string
	// codeOnly rules hold for the package's own code, not its tests
	// (a determinism test may well use randomness to generate inputs).
	codeOnly bool
	// outsideOnly, when set, lists the only outside modules (first path
	// element with a dot) the package may import; the standard library
	// stays allowed.
	outsideOnly []string
}

// testSupport are packages only tests may import, as the standard
// library's net/http/httptest: ordinary packages because test code cannot
// be imported across packages. A test's import of one is exempt from the
// rules (not the layers): jute's tests may start a ZooKeeper with zktest
// though jute's code imports nothing of ours; any package's code importing
// one is a violation.
var testSupport = []struct{ pkg, why string }{
	{"roles/controller/zk/zktest", "zktest starts real ZooKeeper servers (JVMs) for tests: only _test.go files may import it"},
}

// layers are the top-level layers, lowest first: a package may import
// its own layer and the layers below it, never one above.
var layers = [][]string{
	{"metadata/...", "client/...", "web/..."},
	{"raftlog/..."},
	{"transport/..."},
	{"roles/..."},
	{"cli/..."},
	{".", "integration/...", "scripts/..."},
}

var rules = []rule{
	{pkg: "roles/controller/...", deny: []string{"roles/worker/..."},
		why: "the controller and worker trees never import each other; only roles/ (combined mode) sees both"},
	{pkg: "roles/worker/...", deny: []string{"roles/controller/...", "raftlog/...", "go.etcd.io/raft/..."},
		why: "a worker stores nothing and votes for nothing: it knows the controllers only through the worker protocol (transport)"},
	{pkg: "roles/controller/api/...", deny: []string{"go.etcd.io/raft/...", "raftlog/...", "roles/controller/replica/..."},
		why: "the HTTP API works over the small interfaces it declares, never raft types or the replica"},
	{pkg: "roles/controller/api/view", deny: []string{"roles/...", "transport/...", "raftlog/...", "go.etcd.io/raft/...", "net/..."},
		why: "view is the API's answer shapes and pure builders: state in, JSON shapes out"},
	{pkg: "roles/controller/zk/jute", deny: []string{"..."},
		why: "jute is the ZooKeeper wire encoding only: it depends on nothing of ours, so the ZooKeeper server and any client of ours can share it"},
	{pkg: "roles/controller/zk", deny: []string{"go.etcd.io/raft/...", "raftlog/...", "roles/controller/replica/...",
		"roles/controller/api/...", "roles/controller/coord/...", "transport/..."},
		why: "the ZooKeeper server works through the Backend it declares (sessions are leases, writes are proposals), never raft or the controller's parts"},
	{pkg: "roles/controller/zk/watch", deny: []string{"roles/...", "net/...", "os", "time"},
		why: "the watch registry is pure: no I/O, no clock; the server feeds it events and sends what it returns"},
	{pkg: "roles/scheduler/...", deny: []string{"go.etcd.io/raft/...", "raftlog/...", "transport/...", "roles/controller/...",
		"roles/worker/...", "math/rand", "math/rand/v2", "crypto/rand", "net/...", "os"},
		why: "the scheduler is pure: state in, plan out; no raft, no network, no randomness inside", codeOnly: true},
	{pkg: "metadata/...", deny: []string{"roles/...", "transport/...", "raftlog/...", "cli/...", "net/...", "os", "math/rand", "math/rand/v2", "crypto/rand"},
		why: "the state machine is pure and deterministic: no I/O, no randomness", codeOnly: true},
	{pkg: "metadata", deny: []string{"go.yaml.in/yaml/...", "gopkg.in/yaml.v3", "sigs.k8s.io/yaml"},
		why: "parsing users' YAML is metadata/jobspec's job; the state machine stays pure"},
	{pkg: "cli/...", deny: []string{"roles/controller/...", "roles/worker/...", "roles/scheduler/...", "roles/internal/..."},
		why: "cli/ starts roles through roles/ (RunController, RunWorker, RunCombined) only"},
	{pkg: "client/...", deny: []string{"..."},
		why: "the Go client depends on nothing of ours, so users can import it alone"},
	{pkg: "roles/controller/zk/zktest", deny: []string{"..."}, outsideOnly: []string{"github.com/stretchr/testify/..."},
		why: "zktest is test support every layer's tests may import: the standard library and testing helpers only"},
}

type pkgInfo struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func main() {
	pkgs, err := listPackages()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkimports:", err)
		os.Exit(2)
	}
	violations := check(pkgs)
	for _, v := range violations {
		fmt.Println(v)
	}
	if len(violations) > 0 {
		fmt.Printf("checkimports: %d import(s) break the package boundaries in docs/ARCHITECTURE.md; "+
			"move the code to the package that owns it, or pass what it needs through an interface the importer declares\n",
			len(violations))
		os.Exit(1)
	}
}

func listPackages() ([]pkgInfo, error) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("go list: %v\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func check(pkgs []pkgInfo) []string {
	var out []string
	for _, p := range pkgs {
		rel := relative(p.ImportPath)
		if rel == "" && p.ImportPath != module {
			continue // not ours (cannot happen with ./...)
		}
		if rel == "" {
			rel = "."
		}
		imports := map[string]bool{} // import -> only from tests
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			imports[imp] = true
		}
		for _, imp := range p.Imports {
			imports[imp] = false
		}
		sorted := make([]string, 0, len(imports))
		for imp := range imports {
			sorted = append(sorted, imp)
		}
		sort.Strings(sorted)
		for _, imp := range sorted {
			out = append(out, checkImport(rel, imp, imports[imp])...)
		}
	}
	return out
}

// checkImport returns the violations of rel importing imp (a full path);
// fromTests says only rel's tests import it.
func checkImport(rel, imp string, fromTests bool) []string {
	var out []string
	target, ours := relativeOrOutside(imp)
	if ours && target == rel {
		return nil
	}
	if ours {
		from, to := layerOf(rel), layerOf(target)
		if from >= 0 && to > from {
			out = append(out, fmt.Sprintf("%s imports %s: a lower layer may not import a higher one (layers, lowest first: %s)",
				display(rel), display(target), layerNames()))
		}
	}
	if ours {
		for _, ts := range testSupport {
			if match(ts.pkg, target) {
				if !fromTests {
					return append(out, fmt.Sprintf("%s imports %s: %s", display(rel), imp, ts.why))
				}
				return out // a test's import of test support: exempt from the rules
			}
		}
	}
	for _, r := range rules {
		if !match(r.pkg, rel) || (r.codeOnly && fromTests) {
			continue
		}
		if r.outsideOnly != nil && !ours && strings.Contains(strings.SplitN(target, "/", 2)[0], ".") && !matchAny(r.outsideOnly, target) {
			out = append(out, fmt.Sprintf("%s imports %s: %s", display(rel), imp, r.why))
			continue
		}
		for _, d := range r.deny {
			if denied(d, target, ours) {
				out = append(out, fmt.Sprintf("%s imports %s: %s", display(rel), imp, r.why))
				break
			}
		}
	}
	return out
}

// denied reports whether pattern d forbids target. Patterns whose first
// element has a dot name outside modules; others name ours, except the
// standard-library names listed in the rules (no dot, not ours).
func denied(d, target string, ours bool) bool {
	if d == "..." {
		return ours
	}
	first := strings.SplitN(d, "/", 2)[0]
	outside := strings.Contains(first, ".") || isStdPattern(d)
	if outside == ours {
		return false
	}
	return match(d, target)
}

// isStdPattern reports whether d names a standard-library package.
func isStdPattern(d string) bool {
	switch strings.TrimSuffix(d, "/...") {
	case "os", "net", "time", "math/rand", "math/rand/v2", "crypto/rand":
		return true
	}
	return false
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if match(pat, p) {
			return true
		}
	}
	return false
}

func match(pattern, p string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

func relative(imp string) string {
	if imp == module {
		return "."
	}
	if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
		return rest
	}
	return ""
}

func relativeOrOutside(imp string) (string, bool) {
	if r := relative(imp); r != "" {
		return r, true
	}
	return imp, false
}

func layerOf(rel string) int {
	for i, layer := range layers {
		for _, pat := range layer {
			if match(pat, rel) {
				return i
			}
		}
	}
	return -1
}

func layerNames() string {
	names := make([]string, len(layers))
	for i, layer := range layers {
		parts := make([]string, len(layer))
		for j, p := range layer {
			parts[j] = path.Clean(strings.TrimSuffix(p, "/..."))
		}
		names[i] = strings.Join(parts, " ")
	}
	return strings.Join(names, " < ")
}

func display(rel string) string {
	if rel == "." {
		return "main"
	}
	return rel
}
