// Package web holds the dashboard: static HTML, CSS and JavaScript modules
// embedded in the binary and served under /ui/ by every controller. There is
// no build step: the files in static/ are what the browser runs, so the
// dashboard needs no Node.js, CDN or external fonts.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var files embed.FS

// Prefix is the URL path the dashboard is served under.
const Prefix = "/ui/"

// contentTypes is fixed here rather than taken from the host's MIME table
// (mime.TypeByExtension reads /etc/mime.types), so a browser always gets a
// module script type it will execute, whatever the machine.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
}

// csp allows only this origin's scripts and styles: values shown by the
// dashboard (keys, job specs, logs) are inserted as text, and the policy is
// a second line of defence. connect-src stays open because the page probes
// other controllers' /healthz when its own controller dies.
const csp = "default-src 'self'; connect-src *; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// Handler serves the dashboard under /ui/. Paths that name no file get
// index.html, so a reloaded or shared deep link still opens the app (its
// router reads the URL fragment). Every answer carries Cache-Control:
// no-cache: after an upgrade the browser revalidates instead of running a
// stale module next to a new one.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embed directive guarantees static/ exists
	}
	index, err := fs.ReadFile(static, "index.html")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", csp)
		name := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(r.URL.Path, Prefix)), "/")
		body, ctype := index, contentTypes[".html"]
		if name != "" && name != "index.html" {
			if b, err := fs.ReadFile(static, name); err == nil {
				if ct, ok := contentTypes[path.Ext(name)]; ok {
					body, ctype = b, ct
				} else {
					body, ctype = b, "application/octet-stream"
				}
			} else if path.Ext(name) == ".js" || path.Ext(name) == ".css" {
				// A missing module must fail loudly, not load index.html as
				// script (the browser would report a confusing MIME error).
				http.Error(w, "not found", http.StatusNotFound)
				return
			}
		}
		h.Set("Content-Type", ctype)
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}
