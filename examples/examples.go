// Package examples holds the example pages that `ruleagent serve` shows
// under /examples/: static files embedded in the binary, which need
// nothing but the server that serves them (no build step, no CDN; their
// Content-Security-Policy allows this origin only).
package examples

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed pages
var pages embed.FS

// csp lets a page load and call its own origin only: an example that
// works offline, and shows that it does.
const csp = "default-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the pages for GET /examples/...
func Handler() http.Handler {
	sub, err := fs.Sub(pages, "pages")
	if err != nil {
		panic(err) // the folder is embedded: it exists
	}
	files := http.StripPrefix("/examples/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
