package web_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

const pageHTML = `<!doctype html><html><head><title>  The  Test Page </title>
<style>body{color:red}</style><script>alert("x")</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/docs/intro">relative link</a>.</p>
<ul><li>one</li><li>two</li></ul><pre>  keep
   spacing</pre><svg><text>svg noise</text></svg>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table></body></html>`

func contentSite(t *testing.T) *site {
	return newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, pageHTML)
		case "/latin1":
			w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
			w.Write([]byte("<html><body><p>caf\xe9 cr\xe8me</p></body></html>"))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true,"items":[1,2,3]}`)
		case "/text":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "plain text line\n")
		case "/sniff":
			io.WriteString(w, "<html><head><title>Sniffed</title></head><body>no type given</body></html>")
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR secret-binary-bytes"))
		case "/disguised":
			w.Header().Set("Content-Type", "text/plain")
			w.Write(bytes.Repeat([]byte{0, 1, 2, 0xff}, 64))
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "body": string(b),
				"contentType": r.Header.Get("Content-Type"), "accept": r.Header.Get("Accept"), "x": r.Header.Get("X-Custom")})
		case "/gzip":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, strings.Repeat("compressed hello\n", 100))
			zw.Close()
		case "/missing":
			http.Error(w, "no such page", http.StatusNotFound)
		case "/moved":
			http.Redirect(w, r, "/page", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
}

func TestFetchRendersContentByType(t *testing.T) {
	s := contentSite(t)
	h := newHarness(t, "web_fetch", local(nil))
	base := "http://127.0.0.1:" + s.port
	cases := []struct {
		args    map[string]any
		want    []string
		notWant []string
	}{
		{map[string]any{"url": base + "/page"},
			[]string{"Status: 200 OK", "Title: The Test Page", "# Hello", "**bold**", "[relative link](" + base + "/docs/intro)", "- one", "| k | v |"},
			[]string{"alert", "color:red", "svg noise", "<p>"}},
		{map[string]any{"url": base + "/page", "format": "text"},
			[]string{"Title: The Test Page", "Hello", "Some bold text and a relative link.", "- one\n- two", "  keep\n   spacing", "k\tv\na\t1"},
			[]string{"alert", "**", "svg noise", "<"}},
		{map[string]any{"url": base + "/page", "format": "html"}, []string{"<h1>Hello</h1>", "<script>"}, nil},
		{map[string]any{"url": base + "/latin1", "format": "text"}, []string{"café crème"}, nil},
		{map[string]any{"url": base + "/json"}, []string{"Content-Type: application/json", `{"ok":true,"items":[1,2,3]}`}, nil},
		{map[string]any{"url": base + "/text"}, []string{"Content-Type: text/plain", "plain text line"}, nil},
		{map[string]any{"url": base + "/sniff"}, []string{"Content-Type: text/html", "Title: Sniffed", "no type given"}, nil},
		{map[string]any{"url": base + "/png"}, []string{"[binary content (image/png), 36 bytes read; not shown]"}, []string{"secret-binary-bytes"}},
		{map[string]any{"url": base + "/disguised"}, []string{"binary content (text/plain)"}, []string{"\x00"}},
		{map[string]any{"url": base + "/gzip"}, []string{"compressed hello\ncompressed hello"}, nil},
		{map[string]any{"url": base + "/moved"}, []string{"GET " + base + "/page", "Redirected: 1 time(s), from " + base + "/moved", "# Hello"}, nil},
	}
	for _, c := range cases {
		out := h.call(c.args)
		if out.IsError {
			t.Errorf("%v: %s", c.args, out.Content)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out.Content, w) {
				t.Errorf("%v: lacks %q:\n%s", c.args, w, out.Content)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(out.Content, w) {
				t.Errorf("%v: holds %q:\n%s", c.args, w, out.Content)
			}
		}
	}
}

func TestFetchPostAndHeaders(t *testing.T) {
	s := contentSite(t)
	h := newHarness(t, "web_fetch", local(nil))
	url := "http://127.0.0.1:" + s.port + "/echo"
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"url": url, "method": "POST", "body": `{"a":1}`}, `"body":"{\"a\":1}","contentType":"application/json"`},
		{map[string]any{"url": url, "method": "POST", "body": "a=1&b=2"}, `"contentType":"text/plain; charset=utf-8"`},
		{map[string]any{"url": url, "method": "POST", "body": "<x/>", "headers": map[string]string{"Content-Type": "application/xml"}}, `"contentType":"application/xml"`},
		{map[string]any{"url": url, "headers": map[string]string{"X-Custom": "yes", "Accept": "application/json"}}, `"accept":"application/json","body":"","contentType":"","method":"GET","x":"yes"`},
	}
	for _, c := range cases {
		out := h.call(c.args)
		if out.IsError || !strings.Contains(out.Content, c.want) {
			t.Errorf("%v:\n%s\n want %s", c.args, out.Content, c.want)
		}
	}
	out := h.call(map[string]any{"url": url, "body": "x"})
	if out.Kind != "invalid_args" {
		t.Errorf("GET with a body: %s", out.Content)
	}
	getOnly := newHarness(t, "web_fetch", local(map[string]any{"methods": []string{"GET"}}))
	before := s.hits.Load()
	out = getOnly.call(map[string]any{"url": url, "method": "POST", "body": "x"})
	if out.Kind != "permission_denied" || !strings.Contains(out.Content, "method POST is not allowed") || s.hits.Load() != before {
		t.Errorf("POST on a GET-only tool: %s", out.Content)
	}
}

func TestFetchHTTPErrorIsAnErrorResult(t *testing.T) {
	s := contentSite(t)
	h := newHarness(t, "web_fetch", local(nil))
	out := h.call(map[string]any{"url": "http://127.0.0.1:" + s.port + "/missing"})
	if !out.IsError || out.Kind != "" || !strings.Contains(out.Content, "Status: 404 Not Found") || !strings.Contains(out.Content, "no such page") {
		t.Fatalf("%+v", out)
	}
}

func TestFetchWithoutRedirectsShowsTheLocation(t *testing.T) {
	s := contentSite(t)
	h := newHarness(t, "web_fetch", local(map[string]any{"maxRedirects": 0}))
	out := h.call(map[string]any{"url": "http://127.0.0.1:" + s.port + "/moved"})
	if out.IsError || !strings.Contains(out.Content, "Status: 302 Found") || !strings.Contains(out.Content, "Location: /page (not followed)") {
		t.Fatalf("%s", out.Content)
	}
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

// The body cap streams: the tool stops reading at maxBytes, and the
// server is cut off long before it has written its 64 MiB.
func TestFetchBodyCapStopsTheDownload(t *testing.T) {
	var written atomic.Int64
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
		for range 1024 {
			n, err := w.Write(line)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	h := newHarness(t, "web_fetch", local(map[string]any{"maxBytes": 65536}))
	out := h.call(map[string]any{"url": "http://127.0.0.1:" + s.port + "/"})
	if out.IsError || !strings.Contains(out.Content, "Truncated: the body is longer than 65536 bytes") {
		t.Fatalf("%.300s", out.Content)
	}
	if got := len(out.Content); got > 66000 {
		t.Fatalf("%d characters returned", got)
	}
	s.Close() // waits for the handler
	if w := written.Load(); w >= 64<<20 {
		t.Fatalf("the server wrote all %d bytes: the body was not cut off", w)
	}
}

// A gzip bomb: one small gzip member holding 1 MiB of zeros, repeated
// (gzip readers read concatenated members as one stream). The tool
// refuses it once the expansion passes the ratio, and the server is cut
// off long before it has sent its 16 GiB.
func TestFetchRefusesADecompressionBomb(t *testing.T) {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	const members = 16 << 10
	var sent atomic.Int64
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		for range members {
			if _, err := w.Write(member.Bytes()); err != nil {
				return
			}
			sent.Add(1)
		}
	})
	h := newHarness(t, "web_fetch", local(map[string]any{"maxBytes": 32 << 20}))
	out := h.call(map[string]any{"url": "http://127.0.0.1:" + s.port + "/"})
	refused(t, "gzip bomb", out, "decompression-bomb", "expands more than 100 times")
	if strings.Contains(out.Content, "\x00") {
		t.Fatal("zeros reached the output")
	}
	s.Close()
	if n := sent.Load(); n >= members {
		t.Fatalf("the server sent all %d members", n)
	}
}

func TestFetchRefusesNestedCompression(t *testing.T) {
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip, gzip")
		io.WriteString(w, "x")
	})
	h := newHarness(t, "web_fetch", local(nil))
	refused(t, "gzip, gzip", h.call(map[string]any{"url": "http://127.0.0.1:" + s.port + "/"}), "decompression-bomb", "compressed more than once")
}

func TestFetchConfigErrorsNameTheField(t *testing.T) {
	cases := []struct {
		config map[string]any
		path   string
	}{
		{map[string]any{"allowHosts": []string{"https://example.com"}}, "tools[0].config.allowHosts[0]"},
		{map[string]any{"denyHosts": []string{"ok.example", "*.*.x"}}, "tools[0].config.denyHosts[1]"},
		{map[string]any{"allowPrivate": []string{"10.0.0.0/40"}}, "tools[0].config.allowPrivate[0]"},
		{map[string]any{"maxRedirects": 9}, "tools[0].config.maxRedirects"},
		{map[string]any{"proxy": "socks5://127.0.0.1:1"}, "tools[0].config.proxy"},
		{map[string]any{"dnsServer": "resolver"}, "tools[0].config.dnsServer"},
		{map[string]any{"maxBytes": 0}, "tools[0].config.maxBytes"},
		{map[string]any{"timeout": "0s"}, "tools[0].config.timeout"},
		{map[string]any{"maxDecompressionRatio": 1}, "tools[0].config.maxDecompressionRatio"},
		{map[string]any{"userAgent": "a\r\nb"}, "tools[0].config.userAgent"},
		{map[string]any{"methods": []string{"GET", "DELETE"}}, "tools[0].config.methods[1]"},
		{map[string]any{"methods": []string{}}, "tools[0].config.methods"},
		{map[string]any{"format": "pdf"}, "tools[0].config.format"},
		{map[string]any{"maxRequestBytes": -1}, "tools[0].config.maxRequestBytes"},
		{map[string]any{"allowHost": []string{"x"}}, "tools[0].config.allowHost"},
		{map[string]any{"auth": map[string]any{"gh": map[string]any{"hosts": []string{"api.example"}}}}, "tools[0].config.auth.gh"},
		{map[string]any{"auth": map[string]any{"gh": map[string]any{"bearer": "t0ken-123", "hosts": []string{}}}}, "tools[0].config.auth.gh.hosts"},
		{map[string]any{"auth": map[string]any{"gh": map[string]any{"bearer": "t0ken-123", "hosts": []string{"http://x"}}}}, "tools[0].config.auth.gh.hosts[0]"},
		{map[string]any{"auth": map[string]any{"gh": map[string]any{"bearer": "t0ken-123", "basic": map[string]string{"username": "u", "password": "p"}, "hosts": []string{"x.example"}}}}, "tools[0].config.auth.gh"},
		{map[string]any{"auth": map[string]any{"k": map[string]any{"header": "Host", "value": "v", "hosts": []string{"x.example"}}}}, "tools[0].config.auth.k"},
		{map[string]any{"auth": map[string]any{"k": map[string]any{"header": "X-Key", "value": "a\nb", "hosts": []string{"x.example"}}}}, "tools[0].config.auth.k"},
		{map[string]any{"auth": map[string]any{
			"a": map[string]any{"bearer": "t0ken-aaa", "hosts": []string{"x.example"}},
			"b": map[string]any{"bearer": "t0ken-bbb", "hosts": []string{"X.example."}}}}, "tools[0].config.auth.b.hosts[0]"},
	}
	for _, c := range cases {
		_, err := tryHarness("web_fetch", c.config)
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != c.path {
			t.Errorf("%v: %v, want an error at %s", c.config, err, c.path)
		}
	}
}

// A server that stops answering, before its headers or in the middle of
// its body, ends the call with a timeout error once the tool's timeout is
// spent.
func TestFetchTimeout(t *testing.T) {
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "partial ")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	})
	h := newHarness(t, "web_fetch", local(map[string]any{"timeout": "300ms"}))
	for _, path := range []string{"/headers", "/body"} {
		out := h.call(map[string]any{"url": "http://127.0.0.1:" + s.port + path})
		if out.Kind != "timeout" || !strings.Contains(out.Content, "within 300ms") {
			t.Errorf("%s: %s: %s", path, out.Kind, out.Content)
		}
	}
}
