package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandlerServesFilesWithTypes(t *testing.T) {
	index := ""
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="/ui/js/app.js">`},
		{"/ui/index.html", "text/html; charset=utf-8", "<main"},
		{"/ui/app.css", "text/css; charset=utf-8", ":focus-visible"},
		{"/ui/js/app.js", "text/javascript; charset=utf-8", "function route"},
		{"/ui/js/pages/overview.js", "text/javascript; charset=utf-8", "export default"},
		{"/ui/favicon.svg", "image/svg+xml", "<svg"},
	} {
		r := get(t, http.MethodGet, tc.path)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", tc.path, r.StatusCode)
		}
		if got := r.Header.Get("Content-Type"); got != tc.ctype {
			t.Errorf("%s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
		if got := r.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("%s: Cache-Control %q, want no-cache", tc.path, got)
		}
		b := body(t, r)
		if !strings.Contains(b, tc.contains) {
			t.Errorf("%s: body lacks %q", tc.path, tc.contains)
		}
		if tc.path == "/ui/" {
			index = b
		}
	}
	// Deep links and unknown paths open the app (its router reads the
	// fragment); a path cannot climb out of static/.
	for _, p := range []string{"/ui/workers/w-1", "/ui/no/such/page", "/ui/js", "/ui/../web.go", "/ui/%2e%2e/web.go"} {
		r := get(t, http.MethodGet, p)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" || body(t, r) != index {
			t.Errorf("%s: want index.html, got %d %s", p, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
}

func TestHandlerRefusesMissingAssetsAndWrites(t *testing.T) {
	// A missing module must be a 404, not index.html served as script.
	if r := get(t, http.MethodGet, "/ui/js/missing.js"); r.StatusCode != http.StatusNotFound {
		t.Errorf("missing module: status %d, want 404", r.StatusCode)
	}
	if r := get(t, http.MethodPost, "/ui/"); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", r.StatusCode)
	}
	r := get(t, http.MethodHead, "/ui/app.css")
	if r.StatusCode != http.StatusOK || body(t, r) != "" || r.Header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("HEAD: status %d, type %q", r.StatusCode, r.Header.Get("Content-Type"))
	}
}

// There is no bundler to catch a wrong import path: check that every
// relative import of every module names an embedded file.
func TestModuleImportsResolve(t *testing.T) {
	static, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	importRE := regexp.MustCompile(`(?m)^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'`)
	n := 0
	err = fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		b, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		dir := p[:strings.LastIndex(p, "/")+1]
		for _, m := range importRE.FindAllStringSubmatch(string(b), -1) {
			n++
			target := m[1]
			if !strings.HasPrefix(target, "./") && !strings.HasPrefix(target, "../") {
				t.Errorf("%s imports %q: only relative imports of embedded files are allowed (no CDN)", p, target)
				continue
			}
			resolved := resolve(dir, target)
			if _, err := fs.Stat(static, resolved); err != nil {
				t.Errorf("%s imports %q (%s), which is not embedded", p, target, resolved)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("found only %d imports: the pattern no longer matches the code", n)
	}
}

func resolve(dir, rel string) string {
	parts := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	if dir == "" {
		parts = nil
	}
	for _, s := range strings.Split(rel, "/") {
		switch s {
		case ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "/")
}

// The dashboard must work offline: no file may load anything from another
// origin (CDN scripts, web fonts, images).
func TestNoExternalResources(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?(https?:)?//|fonts\.googleapis`)
	_ = fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(files, p)
		if loc := external.FindIndex(b); loc != nil {
			t.Errorf("%s loads an external resource: %q", p, b[loc[0]:min(loc[1]+40, len(b))])
		}
		return nil
	})
}
