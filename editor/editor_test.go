package editor

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

const app = `<!doctype html><title>ruleagent</title><div id="root"></div><script type="module">app()</script>`

func TestHandler(t *testing.T) {
	built := fstest.MapFS{"dist/app/index.html": {Data: []byte(app)}}
	empty := fstest.MapFS{"dist/.gitkeep": {}}
	tests := []struct {
		name       string
		fsys       fstest.MapFS
		method     string
		path       string
		header     map[string]string
		wantStatus int
		wantGzip   bool
		wantBody   string
	}{
		{"the built editor", built, "GET", "/", nil, 200, false, `<div id="root">`},
		{"gzipped when accepted", built, "GET", "/", map[string]string{"Accept-Encoding": "br, gzip"}, 200, true, `<div id="root">`},
		{"gzip refused with q=0", built, "GET", "/", map[string]string{"Accept-Encoding": "gzip;q=0"}, 200, false, `<div id="root">`},
		{"index.html too", built, "GET", "/index.html", nil, 200, false, `<div id="root">`},
		{"not built: how to build it", empty, "GET", "/", nil, 200, false, "make editor"},
		{"other paths are not found", built, "GET", "/assets/x.js", nil, 404, false, ""},
		{"HEAD has no body", built, "HEAD", "/", nil, 200, false, ""},
		{"POST is refused", built, "POST", "/", nil, 405, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			newHandler(tt.fsys).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Header().Get("Content-Encoding") == "gzip"; got != tt.wantGzip {
				t.Fatalf("gzip %v, want %v", got, tt.wantGzip)
			}
			body := rec.Body.Bytes()
			if tt.wantGzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Fatalf("body %q does not contain %q", body, tt.wantBody)
			}
			if tt.method == "HEAD" && len(body) != 0 {
				t.Fatalf("HEAD answered a body")
			}
		})
	}
}

func TestHandlerRevalidates(t *testing.T) {
	h := newHandler(fstest.MapFS{"dist/app/index.html": {Data: []byte(app)}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, rec.Header().Get("Cache-Control"))
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Fatalf("revalidation: status %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

// The page each binary embeds: the built editor after `make editor`, the
// how-to-build page on a fresh clone; either is a whole HTML page.
func TestEmbeddedPage(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	want := "make editor"
	if Built() {
		want = `<div id="root">`
	}
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("status %d, body without %q", rec.Code, want)
	}
}
