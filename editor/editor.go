// Package editor serves ruleagent's web editor, embedded in the binary.
//
// The editor is a React app in this folder, built by Vite (`make editor`)
// into dist/app/index.html: one file holding the script and the styles, so
// the server needs one route for it. The build output is not committed, so
// a fresh clone still builds with `go build`; the binary then serves a page
// that says how to build the editor.
package editor

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"sync"
)

//go:embed all:dist
var dist embed.FS

//go:embed placeholder.html
var placeholder []byte

// appPath is where `vite build` writes the editor inside dist.
const appPath = "dist/app/index.html"

// Handler serves the editor (or the page saying how to build it) for GET /
// and /index.html.
func Handler() http.Handler { return newHandler(dist) }

// Built reports whether the binary holds the built editor.
func Built() bool {
	_, err := fs.Stat(dist, appPath)
	return err == nil
}

type page struct {
	once          sync.Once
	fsys          fs.FS
	body, gzipped []byte
	etag          string
}

func newHandler(fsys fs.FS) http.Handler {
	return &page{fsys: fsys}
}

// load reads the page once and compresses it once: the editor is about half
// a megabyte, a sixth of that gzipped, and it never changes while the binary
// runs.
func (p *page) load() {
	body, err := fs.ReadFile(p.fsys, appPath)
	if err != nil {
		body = placeholder
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	sum := sha256.Sum256(body)
	p.body, p.gzipped, p.etag = body, buf.Bytes(), `"`+hex.EncodeToString(sum[:8])+`"`
}

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" && r.URL.Path != "/index.html" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p.once.Do(p.load)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Revalidate each time: a new binary serves a new editor under the same URL.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", p.etag)
	h.Add("Vary", "Accept-Encoding")
	h.Set("X-Content-Type-Options", "nosniff")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, p.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := p.body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = p.gzipped
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// acceptsGzip reads Accept-Encoding closely enough for browsers, which all
// send "gzip"; "gzip;q=0" refuses it.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}
