package web_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
)

// searx answers like a SearXNG instance with JSON output enabled
// (GET /search?q=...&format=json), with results built from the query. The
// function it returns gives the queries received.
func searx(t *testing.T, prefix string) (*site, func() []url.Values) {
	var mu sync.Mutex
	var seen []url.Values
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != prefix+"/search" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		mu.Lock()
		seen = append(seen, q)
		mu.Unlock()
		if q.Get("format") != "json" {
			http.Error(w, "format", http.StatusForbidden)
			return
		}
		var results []map[string]any
		for i := 1; i <= 8; i++ {
			results = append(results, map[string]any{
				"url": fmt.Sprintf("https://example.org/%d", i), "title": fmt.Sprintf("Result %d for %s", i, q.Get("q")),
				"content": fmt.Sprintf("Snippet %d.", i), "engine": "test", "score": 1.0, "category": "general",
			})
		}
		results = append(results[:2], append([]map[string]any{
			{"url": "https://example.org/1", "title": "duplicate", "content": "dup"},
			{"url": "https://example.org/messy", "title": "Messy\ntitle\x07 here", "content": strings.Repeat("long ", 200)},
		}, results[2:]...)...)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"query": q.Get("q"), "number_of_results": 8, "results": results,
			"answers": []any{}, "suggestions": []any{}, "infoboxes": []any{}, "unresponsive_engines": []any{}})
	})
	return s, func() []url.Values {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

func TestSearchReturnsCompactResults(t *testing.T) {
	s, seen := searx(t, "")
	h := newHarness(t, "web_search", local(map[string]any{"endpoint": "http://127.0.0.1:" + s.port,
		"params": map[string]string{"categories": "general", "safesearch": "1"}}))
	out := h.call(map[string]any{"query": "go netip"})
	if out.IsError {
		t.Fatal(out.Content)
	}
	want := "Results for \"go netip\" (page 1):\n\n1. Result 1 for go netip\n   https://example.org/1\n   Snippet 1.\n\n2. Result 2 for go netip\n   https://example.org/2\n   Snippet 2.\n\n3. Messy title here\n   https://example.org/messy\n   long long"
	if !strings.HasPrefix(out.Content, want) {
		t.Fatalf("%s\n--- want prefix ---\n%s", out.Content, want)
	}
	if n := strings.Count(out.Content, "https://example.org/"); n != 5 {
		t.Fatalf("%d results, want the default 5", n)
	}
	if strings.Contains(out.Content, "duplicate") || strings.Contains(out.Content, "\x07") || strings.Count(out.Content, "long") > 80 {
		t.Fatalf("not cleaned:\n%s", out.Content)
	}
	var structured struct {
		Query   string `json:"query"`
		Results []struct{ Title, URL, Snippet string }
	}
	if err := json.Unmarshal(out.Result.Structured, &structured); err != nil || structured.Query != "go netip" || len(structured.Results) != 5 {
		t.Fatalf("%v %s", err, out.Result.Structured)
	}
	q := seen()[0]
	if q.Get("q") != "go netip" || q.Get("format") != "json" || q.Get("pageno") != "1" || q.Get("categories") != "general" || q.Get("safesearch") != "1" {
		t.Fatalf("query sent: %v", q)
	}

	out = h.call(map[string]any{"query": "x", "limit": 2, "page": 3, "language": "fr-FR", "time_range": "month"})
	if out.IsError || strings.Count(out.Content, "https://example.org/") != 2 || !strings.Contains(out.Content, "(page 3)") {
		t.Fatal(out.Content)
	}
	if q := seen()[1]; q.Get("pageno") != "3" || q.Get("language") != "fr-FR" || q.Get("time_range") != "month" {
		t.Fatalf("query sent: %v", q)
	}
	for _, bad := range []string{`{"query":"  "}`, `{"query":"x","limit":21}`, `{"query":"x","language":"fr;DROP"}`,
		`{"query":"x","time_range":"week"}`, `{"query":"` + strings.Repeat("q", 1001) + `"}`, `{"query":"x","engine":"y"}`} {
		if out := h.call(bad); out.Kind != "invalid_args" {
			t.Errorf("%.60s: %s", bad, out.Content)
		}
	}
}

func TestSearchEndpointUnderThePolicy(t *testing.T) {
	s, _ := searx(t, "/searx")
	// The default policy refuses a search server on a private address,
	// at build, naming the field and the remedy.
	_, err := tryHarness("web_search", map[string]any{"endpoint": "http://127.0.0.1:" + s.port + "/searx"})
	var ce *tools.ConfigError
	if !errors.As(err, &ce) || ce.Path != "tools[0].config.endpoint" || !strings.Contains(ce.Msg, "loopback address; list its address in allowPrivate") {
		t.Fatalf("%v", err)
	}
	for _, c := range []struct {
		config map[string]any
		path   string
	}{
		{map[string]any{}, "tools[0].config.endpoint"},
		{map[string]any{"endpoint": "ftp://search.example"}, "tools[0].config.endpoint"},
		{map[string]any{"endpoint": "https://u:p@search.example"}, "tools[0].config.endpoint"},
		{map[string]any{"endpoint": "https://search.example/?q=x"}, "tools[0].config.endpoint"},
		{map[string]any{"endpoint": "https://search.example", "allowHosts": []string{"other.example"}}, "tools[0].config.endpoint"},
		{map[string]any{"endpoint": "https://search.example", "limit": 0}, "tools[0].config.limit"},
		{map[string]any{"endpoint": "https://search.example", "limit": 30}, "tools[0].config.limit"},
		{map[string]any{"endpoint": "https://search.example", "maxLimit": 500}, "tools[0].config.maxLimit"},
		{map[string]any{"endpoint": "https://search.example", "params": map[string]string{"format": "html"}}, "tools[0].config.params.format"},
	} {
		_, err := tryHarness("web_search", c.config)
		if !errors.As(err, &ce) || ce.Path != c.path {
			t.Errorf("%v: %v, want an error at %s", c.config, err, c.path)
		}
	}
	// Allowed, the path is kept and /search appended.
	h := newHarness(t, "web_search", local(map[string]any{"endpoint": "http://127.0.0.1:" + s.port + "/searx"}))
	if out := h.call(map[string]any{"query": "q"}); out.IsError || !strings.Contains(out.Content, "Result 1 for q") {
		t.Fatal(out.Content)
	}
}

func TestSearchRefusesRedirectsToInternalAddresses(t *testing.T) {
	var port string
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.2:"+port+"/search?"+r.URL.RawQuery, http.StatusFound)
	})
	port = s.port
	svc := internalService(t, "127.0.0.2:"+s.port)
	h := newHarness(t, "web_search", local(map[string]any{"endpoint": "http://127.0.0.1:" + s.port}))
	refused(t, "redirect", h.call(map[string]any{"query": "q"}), netguard.RuleLoopback, "destination 127.0.0.2 is a loopback address")
	if svc.hits.Load() != 0 {
		t.Fatal("the internal service was reached")
	}
}

func TestSearchErrors(t *testing.T) {
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("q") {
		case "forbidden":
			http.Error(w, "Forbidden", http.StatusForbidden)
		case "html":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>not json</html>"))
		case "key":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"results":[{"title":"echo","url":"https://e.example/","content":"got ` + r.Header.Get("X-Search-Key") + `"}]}`))
		case "none":
			w.Write([]byte(`{"results":[]}`))
		}
	})
	h := newHarness(t, "web_search", local(map[string]any{"endpoint": "http://127.0.0.1:" + s.port,
		"auth": map[string]any{"searx": map[string]any{"hosts": []string{"127.0.0.1"}, "header": "X-Search-Key", "value": "search-key-777777", "allowHTTP": true}}}))
	cases := []struct{ q, want, kind string }{
		{"forbidden", "answered 403 Forbidden (a SearXNG instance answers 403 when its JSON format is not enabled", "execution_failed"},
		{"html", "did not answer SearXNG JSON", "execution_failed"},
		{"none", `No results for "none" (page 1).`, ""},
		{"key", "got [REDACTED]", ""},
	}
	for _, c := range cases {
		out := h.call(map[string]any{"query": c.q})
		if out.Kind != c.kind || !strings.Contains(out.Content, c.want) {
			t.Errorf("%s: %s %s", c.q, out.Kind, out.Content)
		}
		if strings.Contains(out.Content, "search-key-777777") {
			t.Errorf("%s: the key reached the model", c.q)
		}
	}
}
